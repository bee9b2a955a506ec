import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A minimal HTTP/1.1 client on a plain socket, so a test can send request targets that URL types
/// would normalise away (`/../x`, `/%2e%2e/x`) and see the server's exact answer.
struct RawHTTPResponse: Sendable {
    var status: Int
    /// Header names lower-cased.
    var headers: [String: String]
    var body: Data

    var text: String { String(decoding: body, as: UTF8.self) }
    func header(_ name: String) -> String? { headers[name.lowercased()] }
}

enum RawHTTP {
    /// Sends `METHOD target HTTP/1.1` with `Connection: close` to 127.0.0.1:`port` and reads the
    /// answer until the server closes. Throws when nothing listens there.
    static func request(port: Int, _ target: String, method: String = "GET", headers extra: [String: String] = [:],
                        body: String? = nil, timeout: Int = 10) throws -> RawHTTPResponse {
        let fd = try connect(port: port, timeout: timeout)
        defer { close(fd) }
        var extra = extra
        if let body { extra["Content-Length"] = "\(body.utf8.count)" }
        if extra["Origin"] == nil { extra["Origin"] = "http://example.test" }  // a page elsewhere, unless told
        let fields = extra.map { "\($0.key): \($0.value)\r\n" }.joined()
        let head = Array("\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\(fields)Connection: close\r\n\r\n\(body ?? "")".utf8)
        guard send(fd, head, head.count, Int32(MSG_NOSIGNAL)) == head.count else { throw ToolFailure("send failed") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n < 0 { throw ToolFailure("recv: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        return try parse(bytes)
    }

    /// A connected socket to 127.0.0.1:`port` whose reads give up after `timeout` seconds.
    static func connect(port: Int, timeout: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ToolFailure("socket: \(String(cString: strerror(errno)))") }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { close(fd); throw ToolFailure("connect 127.0.0.1:\(port): \(String(cString: strerror(errno)))") }
        return fd
    }

    static func parse(_ bytes: [UInt8]) throws -> RawHTTPResponse {
        guard let end = bytes.firstRange(of: [13, 10, 13, 10]) else { throw ToolFailure("no HTTP head in \(bytes.count) bytes") }
        let lines = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw ToolFailure("bad status line '\(lines[0])'") }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return RawHTTPResponse(status: status, headers: headers, body: Data(bytes[end.upperBound...]))
    }
}

/// One client connection kept open across requests (HTTP/1.1 keep-alive), reading each answer by
/// its Content-Length.
final class RawHTTPConnection {
    let fd: Int32
    private var pending: [UInt8] = []

    init(port: Int, timeout: Int = 10) throws {
        fd = try RawHTTP.connect(port: port, timeout: timeout)
    }

    deinit { close(fd) }

    /// Sends raw bytes (a request, or part of one).
    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard Glibc.send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw ToolFailure("send failed") }
    }

    func request(_ target: String, method: String = "GET", headers: [String: String] = [:]) throws -> RawHTTPResponse {
        try send("\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers.map { "\($0.key): \($0.value)\r\n" }.joined() + "\r\n")
        return try readResponse(bodyExpected: method != "HEAD")
    }

    /// Reads one response; throws if the server closed the connection first.
    func readResponse(bodyExpected: Bool = true) throws -> RawHTTPResponse {
        while pending.firstRange(of: [13, 10, 13, 10]) == nil { try fill() }
        let end = pending.firstRange(of: [13, 10, 13, 10])!
        var response = try RawHTTP.parse(Array(pending[..<end.upperBound]))
        let length = bodyExpected && response.status != 304 && response.status != 204 ? Int(response.header("Content-Length") ?? "0") ?? 0 : 0
        while pending.count < end.upperBound + length { try fill() }
        response.body = Data(pending[end.upperBound..<(end.upperBound + length)])
        pending.removeFirst(end.upperBound + length)
        return response
    }

    /// Whether the server has closed the connection (reads until EOF or `timeout`).
    func closedByServer() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n == 0 { return true }
            if n < 0 { return false }
        }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &chunk, chunk.count, 0)
        if n < 0 { throw ToolFailure("recv: \(String(cString: strerror(errno)))") }
        if n == 0 { throw ToolFailure("the server closed the connection") }
        pending += chunk[0..<n]
    }
}
