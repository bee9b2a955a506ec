import Foundation

extension String {
    /// A URL with its secrets hidden, for logs and messages: an SRT passphrase, a token, key or
    /// signature in the query, the password of `user:password@`, an RTMP URL's stream key (the last
    /// part of its path: `rtmp://host/app/KEY`, what a streaming service's key is). Log lines are
    /// shipped and kept; the command line that holds the secret is the operator's.
    public var redactingSecrets: String {
        var text = self
        if let rtmp = try? NSRegularExpression(pattern: "^(rtmp[a-z]*://[^/?#]+/[^?#]*/)[^/?#]+", options: [.caseInsensitive]) {
            text = rtmp.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text), withTemplate: "$1***")
        }
        guard text.contains("=") || text.contains("@") else { return text }
        let secretNames = "passphrase|password|passwd|pass|pwd|key|token|secret|auth|signature|sig|x-amz-signature|x-amz-credential|x-amz-security-token"
        if let query = try? NSRegularExpression(pattern: "([?&](?:\(secretNames))=)[^&#]*", options: [.caseInsensitive]) {
            text = query.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text), withTemplate: "$1***")
        }
        if let userinfo = try? NSRegularExpression(pattern: "^([A-Za-z][A-Za-z0-9+.-]*://[^/@:?#]*:)[^/@?#]*@") {
            text = userinfo.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text), withTemplate: "$1***@")
        }
        return text
    }
}
