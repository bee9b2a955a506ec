import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

/// Bounds on what one server accepts. The defaults hold a few hundred players polling a live
/// playlist; beyond them a client is told (503, 429, 431) instead of hanging, and a socket that
/// cannot be served is closed at once rather than held.
public struct HTTPLimits: Sendable {
    /// Open connections; one more is answered 503 and closed at once (but see `reservedForProbes`).
    public var maxConnections = 1024
    /// Open connections from one client address; one more is answered 429 and closed at once, so
    /// one address cannot take the whole budget. Players behind one NAT share it (a player holds
    /// one or two); behind a reverse proxy on this machine every client is the proxy's address:
    /// raise it to `maxConnections` there.
    public var maxConnectionsPerClient = 64
    /// Connections beyond `maxConnections` kept for health probes: such a connection is served only
    /// a `GET`/`HEAD` of `/status/live` or `/status/ready` (anything else 503), must send it within
    /// 2 s, and is closed after the answer. A full budget does not fail a liveness probe.
    public var reservedForProbes = 4
    /// The request line plus headers; a larger request is answered 431 and closed.
    public var maxHeaderBytes = 16 * 1024
    /// A connection idle this long (no request in progress) is closed. A request head counts as
    /// arrived only when complete, so a head sent a byte at a time is closed after this too.
    public var idleTimeout: Duration = .seconds(60)
    /// A request's body must have arrived this long after its head, or the connection is closed.
    public var bodyTimeout: Duration = .seconds(10)
    /// A response the client does not read (the socket's buffers full, nothing drained) for this
    /// long closes the connection. Progress resets it: a slow reader is served, a stalled one is not.
    public var writeTimeout: Duration = .seconds(30)

    public init() {}
}

/// The connection a request arrived on, as `HTTPService` tells its handler's task: the address it
/// serves (`/chain` checks `Host` and `Origin` against it) and the connection's end (a held
/// low-latency request stops waiting when its client has gone).
public struct ServedConnection: Sendable {
    /// The host the server was bound to, as given (`127.0.0.1`, `0.0.0.0`, `::1`, a name).
    public let host: String
    /// The port the request arrived on.
    public let port: Int
    let end: ConnectionEnd?

    /// Set by `HTTPService` for the duration of each request's handler; nil outside one.
    @TaskLocal public static var current: ServedConnection?

    public init(host: String, port: Int) {
        (self.host, self.port, self.end) = (host, port, nil)
    }

    init(host: String, port: Int, end: ConnectionEnd?) {
        (self.host, self.port, self.end) = (host, port, end)
    }
}

/// Why a server did not start.
public enum ServingError: Error, CustomStringConvertible {
    case cannotListen(host: String, port: Int, reason: String)

    public var description: String {
        switch self {
        case let .cannotListen(host, port, reason):
            "cannot listen on \(host):\(port): \(reason) (choose another address with --serve/--listen HOST:PORT)"
        }
    }
}

/// What a handler knows of a request besides the request: Hummingbird's context, and the client's
/// address (for logs).
public struct ServiceRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// The port the request arrived on.
    let localPort: Int?
    /// Which connection (the server's table of connections knows it by this).
    let connection: ObjectIdentifier

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        localPort = source.channel.localAddress?.port
        connection = ObjectIdentifier(source.channel)
    }

    /// The client as a log says it: `127.0.0.1:53122`.
    public var client: String? {
        guard let remoteAddress else { return nil }
        return remoteAddress.ipAddress.map { "\($0):\(remoteAddress.port ?? 0)" } ?? remoteAddress.description
    }
}

/// An HTTP/1.1 server on Hummingbird (SwiftNIO): keep-alive, pipelining, the limits above. It
/// runs on NIO's event loops from `start` until `stop`; the handler answers every request.
public final class HTTPService: Sendable {
    public typealias Handler = @Sendable (Request, ServiceRequestContext) async throws -> Response

    public let host: String
    /// The port bound (the one chosen when 0 was asked).
    public let port: Int
    private let task: Task<Void, Never>
    private let group: ServiceGroup
    private let connections: ConnectionGuard.Table
    /// Run once the server has stopped (a folder watcher to close, say).
    private let onStop: (@Sendable () -> Void)?

    public var baseURL: String { "http://\(host):\(port)" }
    /// Connections open now.
    public var openConnections: Int { connections.current }

    private init(host: String, port: Int, task: Task<Void, Never>, group: ServiceGroup, connections: ConnectionGuard.Table,
                 onStop: (@Sendable () -> Void)?) {
        self.host = host
        self.port = port
        self.task = task
        self.group = group
        self.connections = connections
        self.onStop = onStop
    }

    /// Binds `host:port` (port 0: any free one) and serves until `stop()`. Returns once the socket
    /// is listening; a bind failure is thrown here. `onStop` runs once the server has stopped (or
    /// when it failed to start).
    public static func start(host: String, port: Int, limits: HTTPLimits = HTTPLimits(),
                             logger: Logger? = nil, onStop: (@Sendable () -> Void)? = nil,
                             handler: @escaping Handler) async throws(ServingError) -> HTTPService {
        // Hummingbird says "listening" at info; an embedding app that passes no logger hears only trouble.
        let logger = logger ?? {
            var quiet = Logger(label: "livefilter.http")
            quiet.logLevel = .warning
            return quiet
        }()
        let connections = ConnectionGuard.Table()
        let channel = HTTP1Channel.Configuration(
            additionalChannelHandlers: [ConnectionGuard(table: connections, limits: limits)],
            idleTimeout: TimeAmount(limits.idleTimeout),
            httpDecoderConfiguration: .init(maxHeaderFieldSize: limits.maxHeaderBytes, maxHeaderListSize: limits.maxHeaderBytes,
                                            maxHeaderFieldCount: 256))
        let bound = BoundPort()
        let app = Application(
            responder: CallbackResponder { (request: Request, context: ServiceRequestContext) in
                // The handler (a chain endpoint's Host check, a held request) learns which address
                // it serves and when its connection ends.
                let served = ServedConnection(host: host, port: context.localPort ?? port, end: connections.end(of: context.connection))
                return try await ServedConnection.$current.withValue(served) { try await handler(request, context) }
            },
            server: .http1(configuration: channel),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "livefilter",
                                                    backlog: 1024),
            onServerRunning: { channel in bound.resolve(.success(channel.localAddress?.port ?? port)) },
            logger: logger)
        // Its own service group, without signal handlers: the command decides when to stop.
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let task = Task {
            do {
                try await group.run()
                bound.resolve(.failure(.cannotListen(host: host, port: port, reason: "the server stopped")))
            } catch {
                bound.resolve(.failure(.cannotListen(host: host, port: port, reason: Self.reason(error))))
            }
        }
        do {
            let actual = try await bound.value()
            return HTTPService(host: host, port: actual, task: task, group: group, connections: connections, onStop: onStop)
        } catch {
            task.cancel()
            onStop?()
            throw error
        }
    }

    /// Stops listening, lets requests in progress finish for up to `grace`, then closes every
    /// connection; returns when the server has stopped.
    public func stop(grace: Duration = .seconds(2)) async {
        await group.triggerGracefulShutdown()
        let task = self.task
        let deadline = Task {
            try? await Task.sleep(for: grace)
            task.cancel()
        }
        await task.value
        deadline.cancel()
        onStop?()
    }

    /// For synchronous callers (`defer`, a test's tear-down): begins `stop()` and returns at once.
    public func shutdown() {
        Task { await stop() }
    }

    static func reason(_ error: any Error) -> String {
        let text = String(describing: error)
        if text.contains("Address already in use") || text.contains("errno: 98") { return "the address is in use" }
        if text.contains("Cannot assign requested address") || text.contains("errno: 99") { return "no such local address" }
        if text.contains("Permission denied") || text.contains("errno: 13") { return "permission denied (ports below 1024 need root)" }
        return text
    }
}

/// The port the server bound, or why it did not: resolved once by whichever comes first.
private final class BoundPort: Sendable {
    private let state = NIOLockedValueBox<(Result<Int, ServingError>?, CheckedContinuation<Int, any Error>?)>((nil, nil))

    func resolve(_ result: Result<Int, ServingError>) {
        let waiter = state.withLockedValue { s -> CheckedContinuation<Int, any Error>? in
            guard s.0 == nil else { return nil }
            s.0 = result
            defer { s.1 = nil }
            return s.1
        }
        waiter?.resume(with: result.mapError { $0 as any Error })
    }

    func value() async throws(ServingError) -> Int {
        do {
            return try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLockedValue { s -> Result<Int, ServingError>? in
                    if let r = s.0 { return r }
                    s.1 = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready.mapError { $0 as any Error }) }
            }
        } catch let error as ServingError {
            throw error
        } catch {
            throw .cannotListen(host: "", port: 0, reason: "\(error)")
        }
    }
}
