import Foundation
import Hummingbird
#if canImport(Glibc)
import Glibc
#endif

/// Serves a folder to HLS players and browsers: the MIME types players expect, playlists never
/// cached and segments cacheable, byte ranges (206/416), HEAD, `ETag`/`Last-Modified` with 304,
/// CORS open, nothing outside the folder (no `..`, no hidden names, no symlink out), and the
/// player page at `/`.
public struct StaticFiles: Sendable {
    public let root: URL
    /// The playlist the player page plays (relative to `root`), or nil to pick one when asked.
    public let playlist: String?
    /// Whether the player page shows the live chart (it reads `/status`, which `run --serve` has).
    public let liveStatus: Bool
    /// Whether the player page shows the chain's text field and sliders (it uses `/chain`).
    public let chainControl: Bool
    private let fileIO = FileIO()

    public init(root: String, playlist: String? = nil, liveStatus: Bool = false, chainControl: Bool = false) {
        self.root = URL(fileURLWithPath: root).standardizedFileURL.resolvingSymlinksInPath()
        self.playlist = playlist
        self.liveStatus = liveStatus
        self.chainControl = chainControl
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
        .accessControlExposeHeaders: "Content-Length, Content-Range, Accept-Ranges, ETag, Last-Modified",
    ]

    public func respond(to request: Request, context: BasicRequestContext) async throws -> Response {
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
            let page = PlayerPage.html(playlist: playlist, liveStatus: liveStatus, chainControl: chainControl)
            return Response(status: .ok, headers: headers,
                            body: request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(string: page)))
        }
        guard let file = resolve(path), let info = FileInfo(path: file) else {
            return Self.text(.notFound, "not found\n", headers)
        }
        headers[.contentType] = Self.mimeType(for: file)
        headers[.cacheControl] = Self.cacheControl(for: file)
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
struct FileInfo {
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

/// IMF-fixdate (RFC 9110 §5.6.7), and the two obsolete forms clients may still send.
enum HTTPDate {
    private static func formatter(_ format: String) -> DateFormatter {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = format
        return f
    }

    static func format(_ seconds: Double) -> String {
        formatter("EEE, dd MMM yyyy HH:mm:ss 'GMT'").string(from: Date(timeIntervalSince1970: seconds))
    }

    static func parse(_ text: String) -> Double? {
        for format in ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"] {
            if let date = formatter(format).date(from: text) { return date.timeIntervalSince1970 }
        }
        return nil
    }
}
