import Foundation
import Hummingbird
#if canImport(Glibc)
import Glibc
#endif

/// Serves a folder to HLS players and browsers: the MIME types players expect, playlists never
/// cached (but live low-latency ones, by rfc8216bis Appendix B.1) and segments cacheable, byte ranges (206/416), HEAD, `ETag`/`Last-Modified` with 304,
/// CORS open, nothing outside the folder (no `..`, no hidden names, no symlink out), and the
/// player page at `/`.
///
/// With a `PublicationBoard`, it also serves Low-Latency HLS (LowLatencyFiles.swift): blocking
/// playlist reloads, delta updates and preload-hinted parts held until they are published.
public struct StaticFiles: Sendable {
    public let root: URL
    /// The playlist the player page plays (relative to `root`), or nil to pick one when asked.
    public let playlist: String?
    /// Whether the player page shows the live chart (it reads `/status`, which `run --serve` has).
    public let liveStatus: Bool
    /// Whether the player page shows the chain's text field and sliders (it uses `/chain`).
    public let chainControl: Bool
    /// Where held requests hear that a file was published; nil: no request is ever held (every
    /// Delivery Directive ignored, a missing file 404 at once).
    public let board: PublicationBoard?
    let playlists = PlaylistSnapshots()
    private let fileIO = FileIO()

    public init(root: String, playlist: String? = nil, liveStatus: Bool = false, chainControl: Bool = false,
                board: PublicationBoard? = nil) {
        self.root = URL(fileURLWithPath: root).standardizedFileURL.resolvingSymlinksInPath()
        self.playlist = playlist
        self.liveStatus = liveStatus
        self.chainControl = chainControl
        self.board = board
    }

    public static func mimeType(for path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "m3u8": "application/vnd.apple.mpegurl"
        case "ts": "video/mp2t"
        case "m4s": "video/iso.segment"
        case "mp4", "m4v": "video/mp4"
        case "m4a": "audio/mp4"
        case "aac": "audio/aac"
        case "mov": "video/quicktime"
        case "mkv": "video/x-matroska"
        case "html": "text/html; charset=utf-8"
        case "json": "application/json"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "png": "image/png"
        case "vtt": "text/vtt"
        default: "application/octet-stream"
        }
    }

    /// Playlists change in place: players must ask again (and may revalidate with the ETag).
    /// Segments and other files are written once under a new name: cacheable for a minute.
    public static func cacheControl(for path: String) -> String {
        path.lowercased().hasSuffix(".m3u8") ? "no-cache, no-store" : "max-age=60"
    }

    public static let cors: HTTPFields = [
        .accessControlAllowOrigin: "*",
        .accessControlAllowMethods: "GET, HEAD, OPTIONS",
        .accessControlAllowHeaders: "Range, If-None-Match, If-Modified-Since, If-Range",
        // Age: hls.js tunes in to a live edge by the Age a CDN in front adds to a playlist response.
        .accessControlExposeHeaders: "Content-Length, Content-Range, Accept-Ranges, ETag, Last-Modified, Age",
    ]

    public func respond(to request: Request, context: some RequestContext) async throws -> Response {
        var headers = Self.cors
        switch request.method {
        case .options: return Response(status: .noContent, headers: headers)
        case .get, .head: break
        default:
            headers[.allow] = "GET, HEAD, OPTIONS"
            return Response(status: .methodNotAllowed, headers: headers)
        }
        guard let path = request.uri.path.removingPercentEncoding else {
            return Self.text(.badRequest, "the path's percent-encoding is invalid\n", headers)
        }
        if path == "/" || path == "/index.html" {
            guard let playlist = playlist ?? defaultPlaylist() else {
                return Self.text(.notFound, "no playlist here yet\n", headers)
            }
            headers[.contentType] = "text/html; charset=utf-8"
            headers[.cacheControl] = "no-cache"
            let page = PlayerPage.html(playlist: playlist, liveStatus: liveStatus, chainControl: chainControl,
                                       hlsjs: PlayerScript.hlsjs() != nil)
            return Response(status: .ok, headers: headers,
                            body: request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(string: page)))
        }
        if path == "/hls.js" {
            guard let script = PlayerScript.hlsjs(), let info = FileInfo(path: script) else {
                return Self.text(.notFound, "hls.js is not installed here (scripts/install-hlsjs.sh, or LIVEFILTER_HLSJS)\n", headers)
            }
            return try await serve(script, info: info, cacheControl: "max-age=3600", request: request, context: context, headers: headers)
        }
        guard let file = resolve(path) else { return Self.text(.notFound, "not found\n", headers) }
        var cacheControl = Self.cacheControl(for: file)
        if board != nil, file.hasSuffix(".m3u8") {
            switch try await lowLatencyPlaylist(file, request: request, headers: headers) {
            case let .answer(response): return response
            case let .file(lowLatencyCaching): cacheControl = lowLatencyCaching
            case .notLowLatency: break
            }
        }
        guard let info = FileInfo(path: file) else {
            if board != nil, let response = try await hintedResource(file, request: request, context: context, headers: headers) {
                return response
            }
            return Self.text(.notFound, "not found\n", headers)
        }
        return try await serve(file, info: info, cacheControl: cacheControl, request: request, context: context, headers: headers)
    }

    /// A file that exists, as it is now: validators, 304, ranges, HEAD.
    func serve(_ file: String, info: FileInfo, cacheControl: String, request: Request, context: some RequestContext,
               headers: HTTPFields) async throws -> Response {
        var headers = headers
        headers[.contentType] = Self.mimeType(for: file)
        headers[.cacheControl] = cacheControl
        headers[.eTag] = info.etag
        headers[.lastModified] = info.lastModified
        headers[.acceptRanges] = "bytes"

        if Self.notModified(request.headers, info: info) {
            return Response(status: .notModified, headers: headers)
        }
        var range: ClosedRange<Int>?
        if request.method == .get, let header = request.headers[.range], Self.ifRangeHolds(request.headers, info: info) {
            switch ByteRange.parse(header, size: info.size) {
            case let .satisfiable(r): range = r
            case .unsatisfiable:
                headers[.contentRange] = "bytes */\(info.size)"
                return Self.text(.rangeNotSatisfiable, "the range is outside the file (\(info.size) bytes)\n", headers)
            case .ignored: break
            }
        }
        if let range {
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(info.size)"
            headers[.contentLength] = String(range.count)
            let body = try await fileIO.loadFile(path: file, range: range, context: context)
            return Response(status: .partialContent, headers: headers, body: body)
        }
        headers[.contentLength] = String(info.size)
        if request.method == .head || info.size == 0 { return Response(status: .ok, headers: headers, body: ResponseBody()) }
        return Response(status: .ok, headers: headers, body: try await fileIO.loadFile(path: file, context: context))
    }

    /// The file for a request path, only when it is a regular file inside the root.
    func resolve(_ path: String) -> String? {
        let components = path.split(separator: "/")
        guard !components.contains(where: { $0 == ".." || $0.hasPrefix(".") || $0.contains("\0") }) else { return nil }
        let file = root.appendingPathComponent(components.joined(separator: "/")).resolvingSymlinksInPath().path
        guard file.hasPrefix(root.path + "/") else { return nil }
        return file
    }

    /// If-None-Match wins over If-Modified-Since (RFC 9110 §13.2.2).
    static func notModified(_ headers: HTTPFields, info: FileInfo) -> Bool {
        if let match = headers[.ifNoneMatch] {
            return match.split(separator: ",").contains { tag in
                let tag = tag.trimmingCharacters(in: .whitespaces)
                return tag == "*" || tag == info.etag || tag == "W/" + info.etag
            }
        }
        if let since = headers[.ifModifiedSince], let date = HTTPDate.parse(since) {
            return info.modified.rounded(.down) <= date
        }
        return false
    }

    /// A range applies only to the representation the client already has part of.
    static func ifRangeHolds(_ headers: HTTPFields, info: FileInfo) -> Bool {
        guard let condition = headers[.ifRange] else { return true }
        return condition == info.etag || condition == info.lastModified
    }

    static func text(_ status: HTTPResponse.Status, _ text: String, _ headers: HTTPFields) -> Response {
        var headers = headers
        headers[.contentType] = "text/plain; charset=utf-8"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// master.m3u8, else index.m3u8, else the first playlist in the folder.
    func defaultPlaylist() -> String? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path))?.sorted() ?? []
        for preferred in ["master.m3u8", "index.m3u8"] where names.contains(preferred) { return preferred }
        return names.first { $0.hasSuffix(".m3u8") }
    }
}

/// What a validator is made of: size, modification time (to the nanosecond) and inode, so a file
/// replaced by rename (a republished playlist) gets a new ETag even within the same second.
struct FileInfo: Sendable {
    let size: Int
    let modified: Double
    let etag: String
    let lastModified: String

    init?(path: String) {
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        size = Int(st.st_size)
        modified = Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9
        etag = "\"" + String(UInt64(st.st_ino), radix: 16) + "-" + String(size, radix: 16) + "-"
            + String(UInt64(st.st_mtim.tv_sec) &* 1_000_000_000 &+ UInt64(st.st_mtim.tv_nsec), radix: 16) + "\""
        lastModified = HTTPDate.format(Double(st.st_mtim.tv_sec))
    }
}

/// One `Range: bytes=…` header against a file of `size` bytes (RFC 9110 §14).
enum ByteRange: Equatable {
    case satisfiable(ClosedRange<Int>)
    /// Well-formed, but no byte of it is in the file: 416.
    case unsatisfiable
    /// Not a single bytes range (another unit, several ranges, bad syntax): served whole, 200.
    case ignored

    static func parse(_ header: String, size: Int) -> ByteRange {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes=") else { return .ignored }
        let spec = value.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .ignored }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        guard first.allSatisfy(\.isASCIIDigit), last.allSatisfy(\.isASCIIDigit) else { return .ignored }
        if first.isEmpty {
            // A suffix: the last N bytes.
            guard let n = Int(last) else { return last.isEmpty ? .ignored : .satisfiable(0...max(0, size - 1)) }
            guard n > 0, size > 0 else { return .unsatisfiable }
            return .satisfiable(max(0, size - n)...(size - 1))
        }
        guard let start = Int(first) else { return .unsatisfiable }
        guard start < size else { return .unsatisfiable }
        if last.isEmpty { return .satisfiable(start...(size - 1)) }
        guard let end = Int(last) else { return .satisfiable(start...(size - 1)) }
        guard end >= start else { return .ignored }
        return .satisfiable(start...min(end, size - 1))
    }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

/// HTTP dates (RFC 9110 §5.6.7) in both directions, by hand and the C library's UTC calls rather
/// than `DateFormatter`: a client's If-Modified-Since is untrusted input (ICU, under Foundation's
/// formatters, died on a hostile date in a playlist: `HLSDate`), and three formatters made for
/// every conditional request cost more than the parse.
@_spi(Testing) public enum HTTPDate {
    static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    static let longWeekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`, of whole seconds since 1970 (UTC).
    public static func format(_ seconds: Double) -> String {
        var time = time_t(seconds.rounded(.down)), t = tm()
        gmtime_r(&time, &t)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(weekdays[Int(t.tm_wday)]), \(two(t.tm_mday)) \(months[Int(t.tm_mon)]) \(t.tm_year + 1900) "
            + "\(two(t.tm_hour)):\(two(t.tm_min)):\(two(t.tm_sec)) GMT"
    }

    /// Seconds since 1970 of an IMF-fixdate, an RFC 850 date (`Sunday, 06-Nov-94 08:49:37 GMT`; a
    /// two-digit year more than 50 years ahead is the century before) or an asctime date
    /// (`Sun Nov  6 08:49:37 1994`); nil for anything else, a day that does not exist included.
    public static func parse(_ text: String, now: Double = Date().timeIntervalSince1970) -> Double? {
        var rest = Substring(text)
        func word(_ choices: [String]) -> Int? {
            guard let i = choices.firstIndex(where: { rest.hasPrefix($0) }) else { return nil }
            rest = rest.dropFirst(choices[i].count)
            return i
        }
        func literal(_ s: String) -> Bool {
            guard rest.hasPrefix(s) else { return false }
            rest = rest.dropFirst(s.count)
            return true
        }
        func digits(_ count: Int, leadingSpace: Bool = false) -> Int? {
            var value = 0
            for i in 0..<count {
                guard let c = rest.first else { return nil }
                rest = rest.dropFirst()
                if leadingSpace, i == 0, c == " " { continue }
                guard let d = c.wholeNumberValue, c.isASCII else { return nil }
                value = value * 10 + d
            }
            return value
        }
        func time() -> (Int, Int, Int)? {
            guard let h = digits(2), literal(":"), let m = digits(2), literal(":"), let s = digits(2) else { return nil }
            return (h, m, s)
        }
        var year: Int, month: Int, day: Int, clock: (Int, Int, Int)
        if word(longWeekdays) != nil {
            guard literal(", "), let d = digits(2), literal("-"), let mo = word(months), literal("-"), let yy = digits(2),
                  literal(" "), let t = time(), literal(" GMT") else { return nil }
            var current = tm(), seconds = time_t(now)
            gmtime_r(&seconds, &current)
            let thisYear = Int(current.tm_year) + 1900
            year = thisYear / 100 * 100 + yy
            if year > thisYear + 50 { year -= 100 }
            (month, day, clock) = (mo + 1, d, t)
        } else {
            guard word(weekdays) != nil else { return nil }
            if literal(", ") {
                guard let d = digits(2), literal(" "), let mo = word(months), literal(" "), let y = digits(4), literal(" "),
                      let t = time(), literal(" GMT") else { return nil }
                (year, month, day, clock) = (y, mo + 1, d, t)
            } else {
                guard literal(" "), let mo = word(months), literal(" "), let d = digits(2, leadingSpace: true), literal(" "),
                      let t = time(), literal(" "), let y = digits(4) else { return nil }
                (year, month, day, clock) = (y, mo + 1, d, t)
            }
        }
        guard rest.isEmpty, day >= 1, clock.0 < 24, clock.1 < 60, clock.2 <= 60 else { return nil }
        var t = tm()
        (t.tm_year, t.tm_mon, t.tm_mday) = (Int32(year - 1900), Int32(month - 1), Int32(day))
        (t.tm_hour, t.tm_min) = (Int32(clock.0), Int32(clock.1))
        // timegm rolls a day past the month's end into the next month (in `t`): such a day does
        // not exist. The seconds are added after, so a leap second's 60 rolls nothing.
        let minute = timegm(&t)
        guard t.tm_mday == Int32(day) else { return nil }
        return Double(minute) + Double(clock.2)
    }
}
