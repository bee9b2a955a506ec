import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A request line and headers, as read.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The path without the query, percent-decoded.
    public var path: String
    public var query: String?
    public var headers: [String: String]
}

/// What to send back.
public struct HTTPResponse: Sendable {
    public enum Body: Sendable {
        case data(Data)
        /// The handler writes the body itself (slowly, partly, or not at all) through the writer.
        case stream(@Sendable (HTTPBodyWriter) -> Void)
    }

    public var status: Int
    public var headers: [(String, String)]
    public var body: Body

    public init(status: Int, headers: [(String, String)] = [], body: Body = .data(Data())) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func text(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: .data(Data(text.utf8)))
    }
}

/// Writes raw bytes to the client; returns false once the client has gone.
public final class HTTPBodyWriter: @unchecked Sendable {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }

    @discardableResult
    public func write(_ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
    }
}

/// A small HTTP/1.1 server: one thread per connection, one request per connection
/// (`Connection: close`), bound to the address given (tests and `livefilter serve` use loopback).
public final class HTTPServer: @unchecked Sendable {
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    public let host: String
    /// The port bound (useful when 0 asked for any free port).
    public private(set) var port: Int = 0
    private let handler: Handler
    private var listener: Int32 = -1
    private let lock = NSLock()
    private var running = false

    public enum Failure: Error, CustomStringConvertible {
        case cannotListen(String)
        public var description: String {
            switch self { case let .cannotListen(reason): reason }
        }
    }

    public init(host: String = "127.0.0.1", port: Int = 0, handler: @escaping Handler) throws {
        self.host = host
        self.handler = handler
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure.cannotListen("socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else {
            close(fd)
            throw Failure.cannotListen("'\(host)' is not an IPv4 address")
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure.cannotListen("cannot listen on \(host):\(port): \(reason)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: actual.sin_port))
        listener = fd
    }

    /// Accepts connections on a background thread until `stop()`.
    public func start() {
        lock.lock(); running = true; lock.unlock()
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "http.accept"
        thread.start()
    }

    public func stop() {
        lock.lock()
        running = false
        let fd = listener
        listener = -1
        lock.unlock()
        if fd >= 0 {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
    }

    deinit { stop() }

    public var baseURL: String { "http://\(host):\(port)" }

    private func acceptLoop() {
        while true {
            lock.lock(); let fd = listener; let go = running; lock.unlock()
            guard go, fd >= 0 else { return }
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            let thread = Thread { [self] in serve(client) }
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let request = readRequest(fd) else { return }
        let response = handler(request)
        var head = "HTTP/1.1 \(response.status) \(Self.reason(response.status))\r\nConnection: close\r\n"
        var hasLength = false
        for (k, v) in response.headers {
            head += "\(k): \(v)\r\n"
            if k.lowercased() == "content-length" { hasLength = true }
        }
        let writer = HTTPBodyWriter(fd: fd)
        switch response.body {
        case let .data(data):
            if !hasLength { head += "Content-Length: \(data.count)\r\n" }
            head += "\r\n"
            guard writer.write(Data(head.utf8)) else { return }
            if request.method != "HEAD" { writer.write(data) }
        case let .stream(produce):
            head += "\r\n"
            guard writer.write(Data(head.utf8)) else { return }
            if request.method != "HEAD" { produce(writer) }
        }
    }

    private func readRequest(_ fd: Int32) -> HTTPRequest? {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while buffer.count < 65536 {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return nil }
            buffer.append(contentsOf: chunk[0..<n])
            if let end = buffer.firstRange(of: [13, 10, 13, 10]) {
                let text = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                var lines = text.components(separatedBy: "\r\n")
                let parts = lines.removeFirst().split(separator: " ")
                guard parts.count >= 2 else { return nil }
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                let target = String(parts[1])
                let pieces = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
                let path = String(pieces[0]).removingPercentEncoding ?? String(pieces[0])
                return HTTPRequest(method: String(parts[0]), path: path, query: pieces.count > 1 ? String(pieces[1]) : nil,
                                   headers: headers)
            }
        }
        return nil
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}
