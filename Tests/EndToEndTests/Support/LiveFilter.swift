import Foundation
import Testing

/// The CLI's documented exit codes.
enum ExitCode: Int32, Sendable {
    case ok = 0
    case processingFailed = 1
    case usage = 2
    case badChain = 3
    case inputUnreadable = 4
    case notMedia = 5
    case noVideo = 6
    case outputFolder = 7
    case outputExists = 8
    case inputChanged = 12
    case partsIncomplete = 13
    case interrupted = 130
}

enum LiveFilter {
    /// The binary, or a test failure saying how to provide it.
    static func binary(sourceLocation: SourceLocation = #_sourceLocation) throws -> URL {
        try #require(Paths.livefilter,
                     "no livefilter executable next to the test bundle; run `swift build -c release` first or set LIVEFILTER_BIN",
                     sourceLocation: sourceLocation)
    }

    /// `livefilter ARGS…`, waited for with a time limit.
    static func run(_ arguments: [String], timeout: Duration = .seconds(180), environment: [String: String] = [:],
                    sourceLocation: SourceLocation = #_sourceLocation) async throws -> ProcessResult {
        let binary = try binary(sourceLocation: sourceLocation)
        return try await Subprocess.run(binary, arguments, timeout: timeout, environment: environment)
    }

    /// Starts `livefilter ARGS…` without waiting, its stderr read as it is written, so the test can
    /// wait for a line (`progress`, `listeningPort`) instead of sleeping.
    static func start(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> Subprocess {
        try Subprocess(try binary(sourceLocation: sourceLocation), arguments, streamingStderr: true)
    }

    /// One line of `--progress json` (schema livefilter.progress/1; Sources/livefilter/ProgressOutput.swift).
    struct Progress: Decodable, Sendable {
        var schema: String
        var phase: String
        var time: Double
        var framesWritten: Int
        var ticks: Int
        var elapsed: Double

        enum CodingKeys: String, CodingKey {
            case schema, phase, time, ticks, elapsed
            case framesWritten = "frames_written"
        }

        /// The record on `line`, or nil for any other line.
        init?(line: String) {
            guard line.hasPrefix("{"), let record = try? JSONDecoder().decode(Progress.self, from: Data(line.utf8)),
                  record.schema == "livefilter.progress/1" else { return nil }
            self = record
        }
    }

    /// Waits until a child started with `--progress json` (lines on stderr) reports a running state
    /// for which `matches` holds — the run has reached that point, however long it took to get there.
    @discardableResult
    static func progress(of child: Subprocess, _ what: String, within timeout: Duration = .seconds(120),
                         where matches: @escaping @Sendable (Progress) -> Bool) async throws -> Progress {
        let line = try await child.firstStderrLine("a progress line with \(what)", within: timeout) { line in
            Progress(line: line).map { $0.phase == "running" && matches($0) } ?? false
        }
        return try #require(Progress(line: line))
    }

    /// Waits for the line a server of `child` prints once it listens — "serving … at http://HOST:PORT/"
    /// (`serve`, `run --serve`) or "chain control at http://HOST:PORT/chain" (`run --control`) — and
    /// returns PORT. Ask for port 0: the system picks a free one, and the line says which.
    static func listeningPort(of child: Subprocess, announcedBy prefix: String, within timeout: Duration = .seconds(60)) async throws -> Int {
        let line = try await child.firstStderrLine("'\(prefix)… http://…'", within: timeout) { $0.hasPrefix(prefix) && $0.contains(" at http://") }
        let address = line.components(separatedBy: " at http://")[1].prefix { $0 != "/" && $0 != " " }
        return try #require(address.split(separator: ":").last.flatMap { Int($0) }, "no port in '\(line)'")
    }

    /// The result without the `--progress json` lines a test asked for, for checks on the other stderr lines.
    static func withoutProgress(_ result: ProcessResult) -> ProcessResult {
        var other = result
        let kept = result.stderrText.split(separator: "\n", omittingEmptySubsequences: false).filter { Progress(line: String($0)) == nil }
        other.stderr = Data(kept.joined(separator: "\n").utf8)
        return other
    }

    /// Requires a clean success (exit 0, no timeout); otherwise one issue with the stderr tail, and
    /// the test stops.
    static func requireSuccess(_ result: ProcessResult, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try #require(result.succeeded, "\(result.summary)", sourceLocation: sourceLocation)
    }

    /// Expects exit `code` and exactly one stderr line, starting with `livefilter: error:`, and no
    /// sign of a crash.
    static func expectError(_ result: ProcessResult, _ code: ExitCode, mentioning needle: String? = nil,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.exitedNormally && !result.timedOut, "\(result.summary)", sourceLocation: sourceLocation)
        #expect(result.status == code.rawValue, "expected exit \(code.rawValue) (\(code)): \(result.summary)",
                sourceLocation: sourceLocation)
        let lines = result.stderrLines
        #expect(lines.count == 1, "expected one stderr line, got \(lines.count):\n\(result.stderrText)",
                sourceLocation: sourceLocation)
        #expect(lines.first?.hasPrefix("livefilter: error:") == true,
                "stderr should start with 'livefilter: error:', got: \(result.stderrText)", sourceLocation: sourceLocation)
        for crashMarker in ["Fatal error", "Stack dump", "Current stack trace", "Segmentation fault", "Illegal instruction"] {
            #expect(!result.stderrText.contains(crashMarker), "crash output: \(result.stderrText)",
                    sourceLocation: sourceLocation)
        }
        if let needle {
            #expect(result.stderrText.contains(needle), "message should mention '\(needle)': \(result.stderrText)",
                    sourceLocation: sourceLocation)
        }
    }
}

/// The bundled clips and what the tests expect of them (figures in samples/README.md).
enum Sample: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case landscape = "landscape.mp4"
    case portraitRotated = "portrait-rotated.mp4"
    case noAudio = "no-audio.mp4"
    case vfr = "vfr.mkv"
    case oddSize = "odd-size.mp4"
    case transport = "transport.ts"

    var url: URL { Paths.sample(rawValue) }
    var testDescription: String { rawValue }

    var hasAudio: Bool { self != .noAudio }
    /// Constant-rate clips: the output must have exactly as many frames as the source.
    var isConstantRate: Bool { self != .vfr }
    /// Nominal frame rate (for the vfr clip, the rate of its densest part).
    var nominalFPS: Double {
        switch self {
        case .noAudio, .transport: 25
        default: 30
        }
    }
}

/// Asserts an output dimension: equal to the source's when even, else rounded to an adjacent even number.
func expectEvenRounded(_ actual: Int?, from source: Int, _ what: String,
                       sourceLocation: SourceLocation = #_sourceLocation) {
    guard let actual else {
        Issue.record("no \(what) in output", sourceLocation: sourceLocation)
        return
    }
    if source % 2 == 0 {
        #expect(actual == source, "\(what): expected \(source), got \(actual)", sourceLocation: sourceLocation)
    } else {
        #expect(actual % 2 == 0 && abs(actual - source) == 1,
                "\(what): odd \(source) should round to \(source - 1) or \(source + 1), got \(actual)",
                sourceLocation: sourceLocation)
    }
}
