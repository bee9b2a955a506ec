import Foundation

/// One fuzz input, read as what a loopback origin answers. Text, so that libFuzzer's mutations of
/// the seeds stay close to playlists:
///
///     #EXTM3U                          the first answer for /index.m3u8
///     …
///     %% /index.m3u8                   the next answer for the same path (a reload)
///     #EXTM3U
///     …
///     %% /a.ts 200 slow                a body, answered a few milliseconds late
///     …bytes…
///     %% /b.ts 302 /c.ts               a redirect (the last word is its Location)
///     %% /c.ts 404
///     %% options lowest oldest noprivate seek=4
///
/// A header line is `%% PATH [STATUS] [WORD…]`; the words: `slow` (the head 5 ms late), `hold`
/// (150 ms late: past the reader's I/O timeout, and its stop), `trickle` (the body in eight pieces, 1 ms
/// apart), `short` (a Content-Length past the body, then the connection closes), `close` (the
/// connection closes with no answer), `html` (Content-Type text/html); any other word is the
/// Location (a status is 200–599). The n-th request for a path gets its n-th answer, then the last again; a path with no
/// answer is a 404. Queries (`_HLS_msn`…) are ignored. `$PORT` stands for the origin's port.
///
/// Every authority (`//host:port`) other than the origin's own (or an empty one, `file:///…`) becomes
/// `127.0.0.1:1`, a closed port: no input makes the fuzzer reach another host or another local service.
struct Script: Sendable {
    struct Answer: Sendable {
        var status = 200
        var body: [UInt8] = []
        var location: String?
        var delay: Duration = .zero
        var trickle = false
        var short = false
        var close = false
        var html = false
    }

    /// The reader's options the input chooses (`%% options …`).
    struct Choices: Sendable {
        var allowPrivateNetworks: Bool?
        var lowest = false
        var liveStart = "edge"
        var seek = 0.0
    }

    var answers: [String: [Answer]] = [:]
    var choices = Choices()

    /// The longest wait an answer may add, so that an input's wall time stays bounded.
    static let hold: Duration = .milliseconds(150)

    init(_ bytes: UnsafeRawBufferPointer, port: Int) {
        var text = String(decoding: bytes, as: UTF8.self)
        text = text.replacingOccurrences(of: "$PORT", with: String(port))
        text = Self.confined(text, port: port)
        var sections = text.components(separatedBy: "\n%% ")
        var first: String? = sections.removeFirst()
        if first!.hasPrefix("%% ") {
            sections.insert(String(first!.dropFirst(3)), at: 0)
            first = nil
        }
        if let first { answers["/index.m3u8"] = [Answer(body: Array(first.utf8))] }
        for section in sections {
            let (line, body) = section.firstIndex(of: "\n").map { (section[..<$0], section[section.index(after: $0)...]) }
                ?? (section[...], ""[...])
            let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard let path = words.first else { continue }
            if path == "options" {
                choose(words.dropFirst())
                continue
            }
            var answer = Answer(body: Array(body.utf8))
            for word in words.dropFirst() {
                switch word {
                case "slow": answer.delay = .milliseconds(5)
                case "hold": answer.delay = Self.hold
                case "trickle": answer.trickle = true
                case "short": answer.short = true
                case "close": answer.close = true
                case "html": answer.html = true
                default:
                    // No 1xx: an informational head has no body, and NIO's server (rightly) traps on one.
                    if word.count == 3, let status = Int(word), (200...599).contains(status) { answer.status = status } else { answer.location = word }
                }
            }
            answers[Self.key(path), default: []].append(answer)
        }
    }

    private mutating func choose(_ words: ArraySlice<String>) {
        for word in words {
            switch word {
            case "noprivate": choices.allowPrivateNetworks = false
            case "private": choices.allowPrivateNetworks = true
            case "lowest": choices.lowest = true
            case "oldest", "holdback", "edge": choices.liveStart = word
            default:
                if word.hasPrefix("seek="), let s = Double(word.dropFirst(5)), s.isFinite { choices.seek = min(max(s, 0), 1e6) }
            }
        }
    }

    /// The path an answer is filed under and a request is looked up by: no query, no fragment,
    /// percent-encoding removed (a playlist's URI may be encoded on its way to the request line).
    static func key(_ target: some StringProtocol) -> String {
        let path = target.prefix { $0 != "?" && $0 != "#" }
        return path.removingPercentEncoding ?? String(path)
    }

    /// `text` with every `//authority` that is not the origin's replaced by a closed local port.
    static func confined(_ text: String, port: Int) -> String {
        let own = "127.0.0.1:\(port)", closed = "127.0.0.1:1"
        var out = ""
        var rest = text[...]
        while let range = rest.range(of: "//") {
            out += rest[..<range.upperBound]
            rest = rest[range.upperBound...]
            let end = rest.firstIndex { "/?#\\\"', \r\n\t".contains($0) } ?? rest.endIndex
            let authority = rest[..<end]
            out += authority.isEmpty || authority == own || authority == closed ? authority : closed[...]
            rest = rest[end...]
        }
        return out + rest
    }
}
