import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// The server's bounds, answered in HTTP rather than by holding sockets (`HTTPLimits`). Sits in each
/// connection's pipeline after the HTTP codec (Hummingbird's `additionalChannelHandlers`).
///
/// Admission is decided when the connection opens: over the client's share (429) or over the budget
/// and its probe reserve (503), the answer is written and the socket closed at once, before any
/// request. In the probe reserve only a health probe is served. Each deadline is a task on the
/// connection's event loop, scheduled by the event that starts it and cancelled by the one that
/// ends it: a request's body (`bodyTimeout`), a write that does not drain (`writeTimeout`).
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// The open connections of one server: how many, how many from each client address, and the
    /// end of each (for the requests held on it).
    final class Table: Sendable {
        enum Admission {
            case admitted
            /// Over `maxConnections`, within `reservedForProbes`: a health probe only.
            case probesOnly
            /// Over `maxConnectionsPerClient`.
            case clientOverShare
            /// Over `maxConnections + reservedForProbes`.
            case full
        }

        private struct State {
            var total = 0
            var byClient: [String: Int] = [:]
            var ends: [ObjectIdentifier: ConnectionEnd] = [:]
        }

        private let state = NIOLockedValueBox(State())

        /// Counts one more connection from `client`, and says whether it is served.
        func open(_ id: ObjectIdentifier, client: String, end: ConnectionEnd, limits: HTTPLimits) -> Admission {
            state.withLockedValue { s in
                s.total += 1
                s.byClient[client, default: 0] += 1
                s.ends[id] = end
                if s.byClient[client, default: 0] > limits.maxConnectionsPerClient { return .clientOverShare }
                if s.total > limits.maxConnections + max(0, limits.reservedForProbes) { return .full }
                return s.total > limits.maxConnections ? .probesOnly : .admitted
            }
        }

        func close(_ id: ObjectIdentifier, client: String) {
            state.withLockedValue { s in
                s.total -= 1
                let left = s.byClient[client, default: 1] - 1
                s.byClient[client] = left > 0 ? left : nil
                s.ends[id] = nil
            }
        }

        /// The end of an open connection; nil once it has closed.
        func end(of id: ObjectIdentifier) -> ConnectionEnd? { state.withLockedValue { $0.ends[id] } }

        var current: Int { state.withLockedValue { $0.total } }
    }

    /// The paths a connection in the probe reserve may ask for.
    static let probePaths: Set<String> = ["/status/live", "/status/ready"]
    /// How long a connection in the probe reserve has to send its request.
    static let probeHeadTimeout = TimeAmount.seconds(2)

    private let table: Table
    private let limits: HTTPLimits
    private let end = ConnectionEnd()
    /// The client's address while counted in the table.
    private var counted: (id: ObjectIdentifier, client: String)?
    private var admission = Table.Admission.admitted
    /// Once a refusal is written, everything else the client sends is ignored.
    private var refused = false
    /// A probe's connection closes once its answer is written.
    private var closeAfterResponse = false
    private var headDeadline: Scheduled<Void>?
    private var bodyDeadline: Scheduled<Void>?
    private var writeDeadline: Scheduled<Void>?

    init(table: Table, limits: HTTPLimits) {
        self.table = table
        self.limits = limits
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context: context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { release() }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    private func admit(context: ChannelHandlerContext) {
        guard counted == nil, !refused else { return }
        let id = ObjectIdentifier(context.channel)
        let client = context.channel.remoteAddress?.ipAddress ?? ""
        counted = (id, client)
        admission = table.open(id, client: client, end: end, limits: limits)
        switch admission {
        case .admitted: break
        case .probesOnly:
            headDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: Self.probeHeadTimeout) { [weak self] in
                self?.headDeadline = nil
                context.close(promise: nil)
            }
        case .clientOverShare:
            refuse(context: context, status: .tooManyRequests, reason: "too many connections from your address; retry shortly\n",
                   extra: [.retryAfter: "1"])
        case .full:
            refuse(context: context, status: .serviceUnavailable, reason: "too many connections; retry shortly\n",
                   extra: [.retryAfter: "1"])
        }
    }

    private func release() {
        for deadline in [headDeadline, bodyDeadline, writeDeadline] { deadline?.cancel() }
        (headDeadline, bodyDeadline, writeDeadline) = (nil, nil, nil)
        if let counted {
            self.counted = nil
            table.close(counted.id, client: counted.client)
        }
        end.close()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if refused { return }
        switch unwrapInboundIn(data) {
        case let .head(request):
            if admission == .probesOnly {
                headDeadline?.cancel()
                headDeadline = nil
                let path = request.path.map { String($0.prefix { $0 != "?" }) } ?? ""
                guard request.method == .get || request.method == .head, Self.probePaths.contains(path) else {
                    refuse(context: context, status: .serviceUnavailable, reason: "too many connections; retry shortly\n",
                           extra: [.retryAfter: "1"])
                    return
                }
                closeAfterResponse = true
            }
            bodyDeadline?.cancel()
            bodyDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(limits.bodyTimeout)) { [weak self] in
                // The handler may be reading the body: no answer can be written in between; close.
                self?.bodyDeadline = nil
                context.close(promise: nil)
            }
        case .end:
            bodyDeadline?.cancel()
            bodyDeadline = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The client closed its side (Hummingbird allows half-closure): no request held for it
        // is worth finishing.
        if case ChannelEvent.inputClosed = event { end.close() }
        context.fireUserInboundEventTriggered(event)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard closeAfterResponse else {
            context.write(data, promise: promise)
            return
        }
        switch unwrapOutboundIn(data) {
        case var .head(response):
            response.headerFields[.connection] = "close"
            context.write(wrapOutboundOut(.head(response)), promise: promise)
        case .end:
            let written = promise ?? context.eventLoop.makePromise()
            written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
            context.write(data, promise: written)
        case .body:
            context.write(data, promise: promise)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            writeDeadline?.cancel()
            writeDeadline = nil
        } else if writeDeadline == nil {
            // The socket's buffers and NIO's high-water mark are full: the client reads nothing.
            writeDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(limits.writeTimeout)) { [weak self] in
                self?.writeDeadline = nil
                context.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let parse = error as? HTTPParserError, parse == .headerOverflow {
            refuse(context: context, status: .requestHeaderFieldsTooLarge, reason: "request headers too large\n", extra: [:])
            return
        }
        if refused { return }
        context.fireErrorCaught(error)
    }

    private func refuse(context: ChannelHandlerContext, status: HTTPResponse.Status, reason: String, extra: HTTPFields) {
        guard !refused else { return }
        refused = true
        var fields: HTTPFields = [.connection: "close", .contentType: "text/plain; charset=utf-8",
                                  .contentLength: String(reason.utf8.count)]
        fields.append(contentsOf: extra)
        context.write(wrapOutboundOut(.head(HTTPResponse(status: status, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(context.channel.allocator.buffer(string: reason))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in context.close(promise: nil) }
    }
}

/// The end of one connection, which requests held on it can wait on: closed when the client closes
/// its side or the connection closes. An action registered after that runs at once.
final class ConnectionEnd: Sendable {
    private struct State {
        var closed = false
        var nextID: UInt64 = 0
        var actions: [UInt64: @Sendable () -> Void] = [:]
    }

    private let state = NIOLockedValueBox(State())

    /// Runs `action` when the connection ends (at once if it has); returns a key for `remove`, nil
    /// when it ran already.
    func onClose(_ action: @escaping @Sendable () -> Void) -> UInt64? {
        let id = state.withLockedValue { s -> UInt64? in
            guard !s.closed else { return nil }
            s.nextID &+= 1
            s.actions[s.nextID] = action
            return s.nextID
        }
        if id == nil { action() }
        return id
    }

    /// Forgets an action whose wait ended first.
    func remove(_ id: UInt64) {
        _ = state.withLockedValue { $0.actions.removeValue(forKey: id) }
    }

    func close() {
        let actions = state.withLockedValue { s -> [@Sendable () -> Void] in
            guard !s.closed else { return [] }
            s.closed = true
            defer { s.actions = [:] }
            return Array(s.actions.values)
        }
        // Run outside the lock: an action resumes a waiting task.
        for action in actions { action() }
    }
}
