import ArgumentParser
import Foundation
import MediaIO

/// Secrets kept off the command line, where `ps` shows them to every local user: an input given
/// as `LIVEFILTER_INPUT_URL`, a control token as `LIVEFILTER_CONTROL_TOKEN`, and `${NAME}` in the
/// input or the token replaced by NAME's value from `--secrets FILE` (lines `NAME=VALUE`; the
/// file may not be readable by other users) or, failing that, the environment. Every value used
/// is hidden from every message from then on (`FFmpegLog.hideSecrets`).
struct SecretValues {
    static let inputVariable = "LIVEFILTER_INPUT_URL"
    static let tokenVariable = "LIVEFILTER_CONTROL_TOKEN"

    private let values: [String: String]
    private let environment: [String: String]
    private let origin: String

    init(file: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ValidationError) {
        self.environment = environment
        guard let file else {
            values = [:]
            origin = "the environment"
            return
        }
        origin = "--secrets \(file) or the environment"
        var info = stat()
        guard stat(file, &info) == 0 else { throw ValidationError("--secrets \(file): \(String(cString: strerror(errno)))") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw ValidationError("--secrets \(file) is not a regular file") }
        if info.st_mode & 0o007 != 0 {
            throw ValidationError("--secrets \(file) can be read by other users (mode \(String(info.st_mode & 0o777, radix: 8))): chmod o-rwx it")
        }
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw ValidationError("--secrets \(file) cannot be read as UTF-8 text")
        }
        var values: [String: String] = [:]
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "="), Self.isName(line[..<equals]) else {
                throw ValidationError("--secrets \(file), line \(number + 1): not NAME=VALUE (NAME: letters, digits and _)")
            }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        self.values = values
    }

    /// The input: as given (with `${NAME}` replaced), else `LIVEFILTER_INPUT_URL`.
    func input(_ given: String?) throws(ValidationError) -> String? {
        guard let given else {
            guard let fromEnvironment = environment[Self.inputVariable], !fromEnvironment.isEmpty else { return nil }
            FFmpegLog.hideSecrets(of: fromEnvironment)
            return fromEnvironment
        }
        let resolved = try substitute(given, what: "the input")
        FFmpegLog.hideSecrets(of: resolved)
        return resolved
    }

    /// The control token: as given (with `${NAME}` replaced), else `LIVEFILTER_CONTROL_TOKEN`.
    func controlToken(_ given: String?) throws(ValidationError) -> String? {
        let token = try given.map { (text: String) throws(ValidationError) -> String in try substitute(text, what: "--control-token") }
            ?? environment[Self.tokenVariable].flatMap { $0.isEmpty ? nil : $0 }
        if let token { FFmpegLog.hideSecret(token) }
        return token
    }

    /// `text` with each `${NAME}` replaced.
    func substitute(_ text: String, what: String) throws(ValidationError) -> String {
        var out = "", rest = Substring(text)
        while let open = rest.range(of: "${") {
            out += rest[..<open.lowerBound]
            guard let close = rest[open.upperBound...].firstIndex(of: "}") else {
                throw ValidationError("\(what): '${' without its '}'")
            }
            let name = rest[open.upperBound..<close]
            guard Self.isName(name) else { throw ValidationError("\(what): '${\(name)}' is not a secret's name (letters, digits and _)") }
            guard let value = values[String(name)] ?? environment[String(name)] else {
                throw ValidationError("\(what) names the secret ${\(name)}, which is not in \(origin)")
            }
            FFmpegLog.hideSecret(value)
            out += value
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    private static func isName(_ text: Substring) -> Bool {
        !text.isEmpty && text.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
    }
}
