import Foundation
import Synchronization

extension String {
    /// This text with the secrets of every URL in it hidden, for logs and messages: user-info
    /// (`http://TOKEN@host/`, `user:password@`), query parameters that carry credentials by name
    /// (`SecretParameters`), an RTMP URL's stream key (the last part of its path:
    /// `rtmp://host/app/KEY`, what a streaming service's key is), and every value registered with
    /// `KnownSecrets` (the input's key and passphrase, wherever a library's message repeats them).
    /// Works on a bare URL and on a whole line that contains URLs. Log lines are shipped and kept.
    public var redactingSecrets: String {
        var text = KnownSecrets.hiding(in: self)
        guard text.contains("://") || text.contains("=") else { return text }
        for (pattern, template) in SecretParameters.rules {
            text = pattern.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text), withTemplate: template)
        }
        return text
    }

    /// This text on one line, safe for a terminal or a log: control characters (escape sequences,
    /// newlines, a bell), bidirectional overrides and other format characters are written as
    /// `\u{…}` escapes, so text from the network can neither forge a log line nor drive a terminal.
    public var escapingControlCharacters: String {
        guard unicodeScalars.contains(where: \.needsEscapeInLogs) else { return self }
        return unicodeScalars.map { $0.needsEscapeInLogs ? $0.escaped(asASCII: true) : String($0) }.joined()
    }

    /// What every message that may hold network text goes through: secrets hidden, control
    /// characters escaped.
    public var forLogs: String { redactingSecrets.escapingControlCharacters }
}

extension Unicode.Scalar {
    fileprivate var needsEscapeInLogs: Bool {
        switch properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator, .format, .surrogate, .unassigned: true
        default: false
        }
    }
}

/// The query parameters whose values are credentials: signed-URL schemes (AWS SigV4 and CloudFront,
/// Google Cloud Storage, Akamai tokens), OAuth and API keys, SRT's passphrase and stream ID.
public enum SecretParameters {
    /// Names matched exactly (case-insensitively).
    public static let names = ["token", "access_token", "refresh_token", "id_token", "sig", "signature", "key", "api_key",
                               "apikey", "jwt", "hdnts", "hdnea", "passphrase", "password", "passwd", "pass", "pwd",
                               "secret", "auth", "authorization", "credential", "credentials", "policy", "key-pair-id",
                               "streamid", "session", "sessionid", "st", "hmac"]
    /// Name prefixes: every parameter of these signing schemes.
    public static let prefixes = ["x-amz-", "x-goog-", "x-ms-", "x-oss-"]
    /// Name parts: `my_token`, `upload-signature`, `user_password`.
    public static let fragments = ["token", "signature", "secret", "passw", "passphrase", "credential", "apikey", "api_key"]

    fileprivate static let rules: [(NSRegularExpression, String)] = {
        let exact = names.map(NSRegularExpression.escapedPattern(for:)).joined(separator: "|")
        let prefixed = prefixes.map { NSRegularExpression.escapedPattern(for: $0) + "[A-Za-z0-9_.-]*" }.joined(separator: "|")
        let containing = fragments.map { "[A-Za-z0-9_.-]*" + NSRegularExpression.escapedPattern(for: $0) + "[A-Za-z0-9_.-]*" }
            .joined(separator: "|")
        // A value ends at the next parameter, a fragment, a space, a quote or a closing bracket (a URL in parentheses).
        let value = "[^&#\\s'\"<>()\\[\\]]*"
        let patterns: [(String, String, NSRegularExpression.Options)] = [
            // user-info: everything between the scheme and the host (a token alone, or user:password).
            ("([A-Za-z][A-Za-z0-9+.-]*://)[^/@\\s?#'\"<>]+@", "$1***@", []),
            // An RTMP URL's stream key, the last part of its path.
            ("(rtmp[a-z]*://[^/?#\\s'\"<>]+/[^?#\\s'\"<>]*/)[^/?#\\s'\"<>]+", "$1***", [.caseInsensitive]),
            // SRT's stream ID and passphrase may hold '#' (the access-control syntax `#!::r=…`): up to the next '&'.
            ("([?&;](?:streamid|passphrase)=)[^&\\s'\"<>()]*", "$1***", [.caseInsensitive]),
            ("([?&;](?:\(exact)|\(prefixed)|\(containing))=)\(value)", "$1***", [.caseInsensitive]),
        ]
        return patterns.compactMap { pattern, template, options in
            (try? NSRegularExpression(pattern: pattern, options: options)).map { ($0, template) }
        }
    }()
}

/// Secret values known to this process (an input's stream key, passphrase, tokens), hidden from
/// every message: a library's own log line can repeat them without a URL around them (FFmpeg's
/// RTMP server: `Unexpected stream wrong, expecting KEY`). Process-wide because the log paths that
/// need it are (FFmpeg's log callback is one per process); values shorter than four characters
/// are not registered (they would hide ordinary words), and at most 64 are kept.
public enum KnownSecrets {
    private static let values = Mutex<[String]>([])

    /// Hides `value` from now on.
    public static func register(_ value: String) {
        guard value.count >= 4 else { return }
        values.withLock { list in
            guard !list.contains(value) else { return }
            if list.count >= 64 { list.removeFirst() }
            list.append(value)
            // Longest first, so a secret that contains another is hidden whole.
            list.sort { $0.count > $1.count }
        }
    }

    /// The secrets in `url`: its user-info, the values of `SecretParameters`, an RTMP stream key;
    /// each registered, and returned.
    @discardableResult
    public static func register(secretsOf url: String) -> [String] {
        var found: [String] = []
        guard let components = URLComponents(string: url) else { return found }
        if let user = components.percentEncodedUser { found.append(user) }
        if let password = components.percentEncodedPassword { found.append(password) }
        for item in components.queryItems ?? [] {
            guard let value = item.value, !value.isEmpty, SecretParameters.isSecret(item.name) else { continue }
            found.append(value)
            if let raw = components.percentEncodedQueryItems?.first(where: { $0.name == item.name })?.value, raw != value { found.append(raw) }
        }
        if components.scheme?.lowercased().hasPrefix("rtmp") == true {
            let parts = components.path.split(separator: "/")
            if parts.count >= 2, let key = parts.last { found.append(String(key)) }
        }
        for value in found { register(value) }
        return found
    }

    static func hiding(in text: String) -> String {
        let list = values.withLock { $0 }
        guard !list.isEmpty else { return text }
        var text = text
        for value in list where text.contains(value) { text = text.replacingOccurrences(of: value, with: "***") }
        return text
    }
}

extension SecretParameters {
    /// Whether a query parameter of this name carries a credential.
    public static func isSecret(_ name: String) -> Bool {
        let lower = name.lowercased()
        return names.contains(lower) || prefixes.contains(where: lower.hasPrefix) || fragments.contains(where: lower.contains)
    }
}
