import Foundation
import Glibc
import Hummingbird
import NIOCore
import Serving
import Synchronization
import Testing

/// Hostile clients of the HTTP side (issue 45): a web page elsewhere that tries to change the
/// chain, one address that opens hundreds of connections, clients that send or read slowly, a held
/// low-latency request whose client has gone. Real sockets on 127/8 (Linux routes all of it to lo,
/// so 127.0.0.2 is a second client address), a real `HTTPService`; nothing mocked.
@Suite(.serialized) struct HostileHTTPTests {
    // MARK: The control surface

    /// A chain held in memory: what a run's controller does with a change, without a run.
    final class Chain: ChainController {
        let text = Mutex("blur sigma=4")
        func currentChain() -> ChainState { ChainState(chain: text.withLock { $0 }, parameters: [], changes: []) }
        func changeChain(_ new: String) async -> ChainChangeOutcome {
            text.withLock { $0 = new }
            return .applied(.init(tick: 1, seconds: 0.04, chain: new))
        }
    }

    static func chainServer(token: String? = nil, host: String = "127.0.0.1") async throws -> (HTTPService, Chain) {
        let chain = Chain()
        let endpoint = ChainEndpoint(controller: chain, token: token)
        let server = try await HTTPService.start(host: host, port: 0) { request, _ in try await endpoint.respondAlone(to: request) }
        return (server, chain)
    }

    static let chainType = "application/x-livefilter-chain"

    @Test("a cross-site form (text/plain, urlencoded, multipart; a foreign Origin) and DNS rebinding (Host: evil.example) change nothing; the served origin with the chain's type does")
    func crossSiteRequestsRefused() async throws {
        let (server, chain) = try await Self.chainServer()
        defer { server.shutdown() }
        let port = server.port, own = "127.0.0.1:\(server.port)"
        func send(_ headers: [String: String], method: String = "POST", host: String? = nil, body: String = "invert") async throws -> Reply {
            try await Client.request(port: port, method: method, "/chain", host: host ?? own, headers: headers, body: body)
        }
        // A page on another site posting a form: the browser sends its Origin and a simple type.
        let form = try await send(["Origin": "http://evil.example", "Content-Type": "text/plain"])
        #expect(form.status == 403, "\(form)")
        for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""] {
            let simple = try await send(type.isEmpty ? [:] : ["Content-Type": type])
            #expect(simple.status == 415 && simple.text.contains(Self.chainType), "\(type): \(simple)")
        }
        // The right type from a foreign origin (it would need a preflight, which is not answered).
        let foreign = try await send(["Origin": "http://evil.example", "Content-Type": Self.chainType], method: "PUT")
        #expect(foreign.status == 403, "\(foreign)")
        let opaque = try await send(["Origin": "null", "Content-Type": Self.chainType], method: "PUT")
        #expect(opaque.status == 403, "a sandboxed page's Origin: \(opaque)")
        // DNS rebinding: the attacker's name resolves to this address; the browser sends its Host.
        for host in ["evil.example:\(port)", "evil.example", "127.0.0.1:\(port + 1)", "127.0.0.1"] {
            let rebound = try await send(["Origin": "http://\(host)", "Content-Type": Self.chainType], method: "PUT", host: host)
            #expect(rebound.status == 421, "Host \(host): \(rebound)")
            let read = try await send([:], method: "GET", host: host, body: "")
            #expect(read.status == 421, "GET with Host \(host): \(read)")
        }
        #expect(chain.text.withLock { $0 } == "blur sigma=4", "nothing above changed the chain")

        // This server's own page (same origin), and a program (no Origin) under each loopback name.
        let page = try await send(["Origin": "http://\(own)", "Content-Type": Self.chainType], method: "PUT", body: "invert")
        #expect(page.status == 200 && page.text.contains("applied at tick"), "\(page)")
        #expect(chain.text.withLock { $0 } == "invert")
        for host in ["localhost:\(port)", "[::1]:\(port)", own] {
            let program = try await send(["Content-Type": Self.chainType + "; charset=utf-8"], host: host, body: "blur 2")
            #expect(program.status == 200, "Host \(host): \(program)")
        }
        #expect(chain.text.withLock { $0 } == "blur 2")
        #expect(try await send([:], method: "GET", body: "").text == "blur 2\n")
    }

    @Test("the player page's chain panel sends the chain's content type")
    func playerPageSendsTheType() async throws {
        let files = StaticFiles(root: FileManager.default.temporaryDirectory.path, playlist: "index.m3u8", chainControl: true)
        let server = try await HTTPService.start(host: "127.0.0.1", port: 0) { try await files.respond(to: $0, context: $1) }
        defer { server.shutdown() }
        let page = try await Client.request(port: server.port, "/")
        #expect(page.status == 200 && page.text.contains("method: 'PUT'") && page.text.contains("'Content-Type': '\(Self.chainType)'"))
    }

    @Test("a token is checked on loopback too: 401 without it or with a wrong one, 200 with it")
    func tokenOnLoopback() async throws {
        let (server, chain) = try await Self.chainServer(token: "s3cret")
        defer { server.shutdown() }
        let headers = ["Content-Type": Self.chainType]
        let anonymous = try await Client.request(port: server.port, method: "PUT", "/chain", headers: headers, body: "invert")
        #expect(anonymous.status == 401, "\(anonymous)")
        let wrong = try await Client.request(port: server.port, method: "PUT", "/chain",
                                             headers: headers.merging(["Authorization": "Bearer s3creT"]) { $1 }, body: "invert")
        #expect(wrong.status == 401, "\(wrong)")
        #expect(chain.text.withLock { $0 } == "blur sigma=4")
        let right = try await Client.request(port: server.port, method: "PUT", "/chain",
                                             headers: headers.merging(["Authorization": "Bearer s3cret"]) { $1 }, body: "invert")
        #expect(right.status == 200, "\(right)")
        #expect(chain.text.withLock { $0 } == "invert")
    }

    @Test("on a wildcard bind any Host is served, and a foreign Origin is still refused")
    func wildcardBind() async throws {
        let (server, chain) = try await Self.chainServer(host: "0.0.0.0")
        defer { server.shutdown() }
        let type = ["Content-Type": Self.chainType]
        let named = try await Client.request(port: server.port, method: "PUT", "/chain", host: "studio.lan:\(server.port)",
                                             headers: type.merging(["Origin": "http://studio.lan:\(server.port)"]) { $1 }, body: "invert")
        #expect(named.status == 200, "\(named)")
        let foreign = try await Client.request(port: server.port, method: "PUT", "/chain", host: "studio.lan:\(server.port)",
                                               headers: type.merging(["Origin": "http://evil.example"]) { $1 }, body: "blur 9")
        #expect(foreign.status == 403, "\(foreign)")
        #expect(chain.text.withLock { $0 } == "invert")
    }

    // MARK: Fair HTTP under abuse

    /// Answers `/status/live`; anything else after reading its body.
    static func plainServer(_ limits: HTTPLimits) async throws -> HTTPService {
        try await HTTPService.start(host: "127.0.0.1", port: 0, limits: limits) { request, _ in
            if request.uri.path == "/status/live" { return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: "alive\n"))) }
            _ = try await request.body.collect(upTo: 1 << 20)
            return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: "ok\n")))
        }
    }

    /// Until the server's count of open connections has not moved for 200 ms (it accepts and
    /// refuses on its own threads).
    static func settled(_ server: HTTPService) async throws -> Int {
        var last = -1, still = ContinuousClock.now
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            let now = server.openConnections
            if now != last { (last, still) = (now, .now) } else if ContinuousClock.now - still > .milliseconds(200) { return now }
            try await Task.sleep(for: .milliseconds(20))
        }
        return server.openConnections
    }

    @Test("200 idle connections from one address take 32 places (the rest answered 429 and closed at once); another address is answered at once",
          .timeLimit(.minutes(1)))
    func connectionHog() async throws {
        var limits = HTTPLimits()
        limits.maxConnections = 100
        limits.maxConnectionsPerClient = 32
        let server = try await Self.plainServer(limits)
        defer { server.shutdown() }
        let hog = try (0..<200).map { _ in try Client(port: server.port, from: "127.0.0.1") }
        #expect(try await Self.settled(server) == 32, "one address holds its share, no more")
        // Those over the share were answered and closed, without sending anything.
        let refused = hog.filter { $0.closedAlready() }
        #expect(refused.count == 168, "closed at once: \(refused.count)")
        #expect(refused.allSatisfy { $0.received.hasPrefix("HTTP/1.1 429") }, "\(refused.first?.received ?? "")")

        let started = ContinuousClock.now
        let other = try await Client.request(port: server.port, "/index.m3u8", from: "127.0.0.2")
        #expect(other.status == 200 && ContinuousClock.now - started < .milliseconds(500), "\(other) after \(ContinuousClock.now - started)")
        withExtendedLifetime(hog) {}
    }

    @Test("with the budget full (two addresses at their share), /status/live is still answered; anything else gets 503 at once",
          .timeLimit(.minutes(1)))
    func livenessWhenFull() async throws {
        var limits = HTTPLimits()
        limits.maxConnections = 16
        limits.maxConnectionsPerClient = 8
        let server = try await Self.plainServer(limits)
        defer { server.shutdown() }
        let held = try ["127.0.0.1", "127.0.0.3"].flatMap { address in try (0..<8).map { _ in try Client(port: server.port, from: address) } }
        #expect(try await Self.settled(server) == 16)
        for _ in 0..<3 {  // a probe's connection is closed after its answer: the reserve stays free
            let live = try await Client.request(port: server.port, "/status/live", from: "127.0.0.2")
            #expect(live.status == 200 && live.text == "alive\n", "\(live)")
        }
        let page = try await Client.request(port: server.port, "/index.m3u8", from: "127.0.0.2")
        #expect(page.status == 503 && page.headers["retry-after"] != nil, "\(page)")
        withExtendedLifetime(held) {}
    }

    @Test("a request body that trickles is cut at bodyTimeout; a response the client does not read is cut at writeTimeout",
          .timeLimit(.minutes(1)))
    func slowClients() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let size = 64 << 20
        try Data(count: size).write(to: folder.appendingPathComponent("big.ts"))
        var limits = HTTPLimits()
        limits.bodyTimeout = .seconds(1)
        limits.writeTimeout = .seconds(1)
        let files = StaticFiles(root: folder.path)
        let server = try await HTTPService.start(host: "127.0.0.1", port: 0, limits: limits) { request, context in
            if request.method == .put {
                _ = try await request.body.collect(upTo: 1 << 20)
                return Response(status: .ok)
            }
            return try await files.respond(to: request, context: context)
        }
        defer { server.shutdown() }

        let writer = try Client(port: server.port)
        try writer.send("PUT /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n0123456789")
        let started = ContinuousClock.now
        #expect(try await Client.blocking { writer.closedByServer(within: .seconds(5)) }, "a body 990 bytes short is not waited for")
        #expect(ContinuousClock.now - started < .seconds(3), "closed after \(ContinuousClock.now - started)")

        // A reader that stops reading: the server's writes stall once the socket buffers are full.
        let reader = try Client(port: server.port, receiveBuffer: 4096)
        try reader.send("GET /big.ts HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        try await Task.sleep(for: .seconds(3))
        let bytes = try await Client.blocking { reader.drain(within: .seconds(10)) }
        #expect(bytes < size, "the stalled response was cut: \(bytes) of \(size) bytes")
    }

    @Test("a held _HLS_msn request whose client disconnects leaves the board at once", .timeLimit(.minutes(1)))
    func heldRequestReleasedOnDisconnect() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-ll-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // A live low-latency playlist with a 4 s target: a held request would wait 12 s for msn 3.
        var lines = ["#EXTM3U", "#EXT-X-VERSION:9", "#EXT-X-TARGETDURATION:4",
                     "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=3", "#EXT-X-PART-INF:PART-TARGET=1",
                     "#EXT-X-MEDIA-SEQUENCE:0", "#EXT-X-MAP:URI=\"init.mp4\""]
        for s in 0..<2 {
            lines += (0..<4).map { "#EXT-X-PART:DURATION=1,URI=\"seg\(s)_p\($0).m4s\"" } + ["#EXTINF:4.0,", "seg\(s).m4s"]
        }
        lines.append("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"seg2_p0.m4s\"")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: folder.appendingPathComponent("index.m3u8"))
        let board = PublicationBoard()
        let files = StaticFiles(root: folder.path, board: board)
        let server = try await HTTPService.start(host: "127.0.0.1", port: 0) { request, context in
            try await files.respond(to: request, context: context)
        }
        defer { server.shutdown() }

        for target in ["/index.m3u8?_HLS_msn=3", "/seg2_p0.m4s"] {
            let client = try Client(port: server.port)
            try client.send("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            try await Self.until("the request is held") { board.waiting == 1 }
            client.close()
            let gone = ContinuousClock.now
            try await Self.until("the held request leaves the board") { board.waiting == 0 }
            #expect(ContinuousClock.now - gone < .seconds(1), "\(target): released \(ContinuousClock.now - gone) after the client went")
        }
    }

    static func until(_ what: String, within limit: Duration = .seconds(5), _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + limit
        while !condition() {
            guard ContinuousClock.now < deadline else { throw Failure("\(what): not within \(limit)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    struct Reply: CustomStringConvertible {
        var status: Int
        var headers: [String: String]
        var text: String
        var description: String { "\(status) \(text.trimmingCharacters(in: .whitespacesAndNewlines))" }
    }

    /// A TCP client on a plain socket, from a chosen 127/8 source address; reads give up after 5 s.
    final class Client: @unchecked Sendable {
        let fd: Int32
        private(set) var received = ""

        init(port: Int, from source: String = "127.0.0.1", receiveBuffer: Int32? = nil) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw Failure("socket: \(String(cString: strerror(errno)))") }
            var tv = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
            func address(_ ip: String, _ port: Int) -> sockaddr_in {
                var addr = sockaddr_in()
                addr.sin_family = sa_family_t(AF_INET)
                addr.sin_port = in_port_t(UInt16(port).bigEndian)
                inet_pton(AF_INET, ip, &addr.sin_addr)
                return addr
            }
            var local = address(source, 0), remote = address("127.0.0.1", port)
            let length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
            let connected = bound == 0
                ? withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) } } : -1
            guard connected == 0 else {
                let reason = String(cString: strerror(errno))
                Glibc.close(fd)
                throw Failure("connect from \(source): \(reason)")
            }
        }

        deinit { Glibc.close(fd) }

        func close() { shutdown(fd, Int32(SHUT_RDWR)) }

        func send(_ text: String) throws {
            let bytes = Array(text.utf8)
            guard Glibc.send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw Failure("send failed") }
        }

        /// Reads until the server closes (true) or `limit` passes with the socket still open (false).
        func closedByServer(within limit: Duration) -> Bool {
            let deadline = ContinuousClock.now + limit
            var chunk = [UInt8](repeating: 0, count: 4096)
            var tv = timeval(tv_sec: 0, tv_usec: 50_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            while ContinuousClock.now < deadline {
                let n = recv(fd, &chunk, chunk.count, 0)
                if n == 0 { return true }
                if n > 0 { received += String(decoding: chunk[0..<n], as: UTF8.self); continue }
                if errno != EAGAIN && errno != EWOULDBLOCK { return true }  // reset
            }
            return false
        }

        /// Whether the server has closed the connection, from what has arrived by now (no waiting).
        func closedAlready() -> Bool {
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = recv(fd, &chunk, chunk.count, Int32(MSG_DONTWAIT))
                if n == 0 { return true }
                if n > 0 { received += String(decoding: chunk[0..<n], as: UTF8.self); continue }
                return errno != EAGAIN && errno != EWOULDBLOCK  // a reset is a close too
            }
        }

        /// Reads everything until the server closes or `limit` passes: the bytes read.
        func drain(within limit: Duration) -> Int {
            let deadline = ContinuousClock.now + limit
            var chunk = [UInt8](repeating: 0, count: 65536)
            var total = 0
            while ContinuousClock.now < deadline {
                let n = recv(fd, &chunk, chunk.count, 0)
                if n <= 0 { break }
                total += n
            }
            return total
        }

        /// Reads one whole response (the request said `Connection: close`).
        func readAll() throws -> Reply {
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = recv(fd, &chunk, chunk.count, 0)
                if n < 0 { throw Failure("recv: \(String(cString: strerror(errno)))") }
                if n == 0 { break }
                bytes += chunk[0..<n]
            }
            let text = String(decoding: bytes, as: UTF8.self)
            guard let split = text.range(of: "\r\n\r\n") else { throw Failure("no HTTP head in '\(text)'") }
            let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
            guard let status = lines.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
                throw Failure("bad status line in '\(text)'")
            }
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            return Reply(status: status, headers: headers, text: String(text[split.upperBound...]))
        }

        /// One request with `Connection: close`, from `source`, its answer read to the end.
        static func request(port: Int, method: String = "GET", _ target: String, from source: String = "127.0.0.1",
                            host: String? = nil, headers: [String: String] = [:], body: String = "") async throws -> Reply {
            try await blocking {
                let client = try Client(port: port, from: source)
                var fields = headers
                if !body.isEmpty || method == "PUT" || method == "POST" { fields["Content-Length"] = "\(body.utf8.count)" }
                let head = "\(method) \(target) HTTP/1.1\r\nHost: \(host ?? "127.0.0.1:\(port)")\r\n"
                    + fields.map { "\($0.key): \($0.value)\r\n" }.joined() + "Connection: close\r\n\r\n"
                try client.send(head + body)
                return try client.readAll()
            }
        }

        /// Runs blocking socket work on a thread of its own, off the tasks' threads (the server's
        /// handlers run there).
        static func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
            try await withCheckedThrowingContinuation { continuation in
                Thread { continuation.resume(with: Result { try work() }) }.start()
            }
        }
    }
}
