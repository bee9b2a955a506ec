import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The HTTP origin the fuzzed reader reads: one per process, on 127.0.0.1 and a port of the
/// system's choosing, on NIO's shared event loops (the ones AsyncHTTPClient uses too). It answers
/// from the current input's `Script`; between inputs, `load` swaps the script and restarts the
/// per-path request counts.
final class LoopbackOrigin: Sendable {
    struct State {
        var script: Script?
        var served: [String: Int] = [:]
        /// Requests in order, for the replay's report.
        var log: [String] = []
        /// Requests that came after the input's reader had gone (`close`).
        var late = 0
    }

    static let shared = LoopbackOrigin()

    let port: Int
    private let state = Mutex(State())
    private let channel: any Channel

    private init() {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        // The handler needs the origin, which needs the channel: a box filled before the first connection.
        let box = OriginBox()
        let bootstrapped = bootstrap.childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                try channel.pipeline.syncOperations.addHandler(OriginHandler(box: box))
            }
        }
        do {
            channel = try bootstrapped.bind(host: "127.0.0.1", port: 0).wait()
        } catch {
            fatalError("the loopback origin cannot listen: \(error)")
        }
        port = channel.localAddress?.port ?? 0
        box.set(self)
    }

    /// The input to answer from now on.
    func load(_ script: Script) {
        state.withLock { $0 = State(script: script) }
    }

    /// The input's reader has gone: what still arrives is counted, and answered with a 404.
    func close() -> (log: [String], late: Int) {
        state.withLock { s in
            s.script = nil
            return (s.log, s.late)
        }
    }

    /// Requests that arrived after `close`, since the last `load`.
    var late: Int { state.withLock { $0.late } }

    func answer(_ target: String) -> Script.Answer {
        let key = Script.key(target)
        return state.withLock { s in
            guard let script = s.script else {
                s.late += 1
                return Script.Answer(status: 404)
            }
            let n = s.served[key, default: 0]
            s.served[key] = n + 1
            if s.log.count < 64 { s.log.append(target.count > 80 ? String(target.prefix(80)) + "…" : target) }
            guard let answers = script.answers[key], !answers.isEmpty else { return Script.Answer(status: 404) }
            return answers[min(n, answers.count - 1)]
        }
    }
}

final class OriginBox: Sendable {
    let origin = Mutex<LoopbackOrigin?>(nil)
    func set(_ o: LoopbackOrigin) { origin.withLock { $0 = o } }
}

/// One connection's requests, answered in order (NIO's pipelining handler holds a request that
/// arrives before the last answer has ended).
final class OriginHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let box: OriginBox
    private var target = "/"
    private var keepAlive = true

    init(box: OriginBox) { self.box = box }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case let .head(head):
            target = head.uri
            keepAlive = head.isKeepAlive
        case .body:
            break
        case .end:
            let answer = box.origin.withLock { $0 }?.answer(target) ?? Script.Answer(status: 503)
            Self.send(answer, keepAlive: keepAlive, on: context.channel)
        }
    }

    private static func send(_ answer: Script.Answer, keepAlive: Bool, on channel: any Channel) {
        let loop = channel.eventLoop
        @Sendable func write(_ part: HTTPServerResponsePart) { channel.write(part, promise: nil) }
        @Sendable func respond() {
            if answer.close {
                channel.close(promise: nil)
                return
            }
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: String(answer.body.count + (answer.short ? 10 : 0)))
            if answer.html { headers.add(name: "Content-Type", value: "text/html") }
            if let location = answer.location { headers.add(name: "Location", value: location) }
            headers.add(name: "Connection", value: keepAlive && !answer.short ? "keep-alive" : "close")
            let status = HTTPResponseStatus(statusCode: answer.status)
            write(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers)))
            let body = answer.body
            let pieces: [ArraySlice<UInt8>]
            if answer.trickle && body.count > 1 {
                let size = (body.count + 7) / 8
                pieces = stride(from: 0, to: body.count, by: size).map { body[$0..<min($0 + size, body.count)] }
            } else {
                pieces = [body[...]]
            }
            @Sendable func finish() {
                if answer.short {
                    channel.flush()
                    channel.close(promise: nil)
                    return
                }
                channel.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete { _ in
                    if !keepAlive { channel.close(promise: nil) }
                }
            }
            @Sendable func piece(_ i: Int) {
                guard i < pieces.count else { return finish() }
                if !pieces[i].isEmpty { write(.body(.byteBuffer(ByteBuffer(bytes: pieces[i])))) }
                if answer.trickle {
                    channel.flush()
                    loop.scheduleTask(in: .milliseconds(1)) { piece(i + 1) }
                } else {
                    piece(i + 1)
                }
            }
            piece(0)
        }
        if answer.delay > .zero {
            let (seconds, atto) = answer.delay.components
            loop.scheduleTask(in: .nanoseconds(seconds * 1_000_000_000 + atto / 1_000_000_000)) { respond() }
        } else {
            respond()
        }
    }
}
