import ArgumentParser
import Foundation
import HLS
import MediaIO

extension HLSLinter.Profile: ExpressibleByArgument {}

struct LintCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lint",
        abstract: "Check an HLS playlist against RFC 8216 (and, with --profile livefilter, what livefilter publishes).",
        discussion: """
            A master playlist's media playlists are fetched and checked too (relative URIs resolve against \
            the master). Each violation prints as FILE:LINE: error|warning: [rule] message.
            Exit codes: 0 no errors (warnings allowed); 1 errors found; 4 the playlist is missing or unreachable.
            Rules: \(HLSLinter.rules.keys.sorted().joined(separator: ", ")).
            """)

    @Argument(help: "Playlist path, file: URL, or http/https URL.")
    var playlist: String

    @Option(help: "Rules to apply.")
    var profile: HLSLinter.Profile = .rfc8216

    @Flag(help: "Print the violations as a JSON array of {file, line, severity, rule, message}.")
    var json = false

    @Option(help: "Seconds a network read may stall before giving up.")
    var timeout: Int = 15

    func validate() throws {
        guard timeout > 0 else { throw ValidationError("--timeout must be at least 1 second") }
    }

    struct Finding: Encodable {
        var file: String
        var line: Int
        var severity: String
        var rule: String
        var message: String
    }

    func run() throws {
        // FFmpeg's own network messages would interleave with the report; failures come back as errors.
        FFmpegLog.setLevel(.quiet)
        let linter = HLSLinter(profile: profile)
        let text: String
        do {
            text = try fetch(playlist)
        } catch {
            throw CommandFailure(error)
        }
        let report = linter.lint(text)
        var findings = report.violations.map { Finding(file: playlist, $0) }

        if report.kind == .master {
            var seen: Set<String> = []
            for reference in report.referencedPlaylists {
                let target = Self.resolve(reference.uri, against: playlist)
                guard seen.insert(target).inserted else { continue }
                do {
                    let mediaText = try fetch(target)
                    findings += linter.lint(mediaText).violations.map { Finding(file: target, $0) }
                } catch {
                    findings.append(Finding(file: playlist, line: reference.line, severity: LintSeverity.error.rawValue,
                                            rule: "uri-unreachable", message: "cannot read '\(reference.uri)': \(error.description)"))
                }
            }
        }

        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data = try encoder.encode(findings)
            print(String(decoding: data, as: UTF8.self))
        } else {
            for f in findings { print("\(f.file):\(f.line): \(f.severity): [\(f.rule)] \(f.message)") }
        }
        if findings.contains(where: { $0.severity == LintSeverity.error.rawValue }) {
            throw ExitCode(LiveFilterExit.processingFailed.rawValue)
        }
    }

    private func fetch(_ url: String) throws(MediaError) -> String {
        try fetchText(url, timeout: .seconds(timeout), maxBytes: 16 << 20)
    }

    /// A URI from a playlist, resolved against the playlist's own location (RFC 8216 §4.1, RFC 3986).
    static func resolve(_ uri: String, against base: String) -> String {
        if uri.contains("://") || uri.hasPrefix("/") { return uri }
        if base.contains("://"), let baseURL = URL(string: base), let resolved = URL(string: uri, relativeTo: baseURL) {
            return resolved.absoluteString
        }
        let path = base.hasPrefix("file:") ? String(base.dropFirst(5)) : base
        let folder = (path as NSString).deletingLastPathComponent
        return folder.isEmpty ? uri : folder + "/" + uri
    }
}

extension LintCommand.Finding {
    init(file: String, _ v: LintViolation) {
        self.init(file: file, line: v.line, severity: v.severity.rawValue, rule: v.rule, message: v.message)
    }
}
