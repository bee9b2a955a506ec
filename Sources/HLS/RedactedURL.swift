import Foundation

extension String {
    /// A URL with its secrets hidden, for logs and messages: an SRT passphrase, a token, key or
    /// signature in the query, the password of `user:password@`. Log lines are shipped and kept;
    /// the command line that holds the secret is the operator's.
    public var redactingSecrets: String {
        guard contains("=") || contains("@") else { return self }
        var text = self
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
