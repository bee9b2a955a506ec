import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// The server's bounds, answered in HTTP rather than by dropping sockets: a connection beyond
/// `maxConnections` gets 503 with `Retry-After`, a request whose header block is larger than
/// `maxHeaderBytes` gets 431; both then close. Sits in each connection's pipeline after the HTTP
/// codec (Hummingbird's `additionalChannelHandlers`).
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// Open connections, shared by every connection of one server.
    final class Count: Sendable {
        private let value = NIOLockedValueBox(0)
        /// Counts one more; false when that one is over `limit`.
        func open(limit: Int) -> Bool { value.withLockedValue { $0 += 1; return $0 <= limit } }
        func close() { value.withLockedValue { $0 -= 1 } }
        var current: Int { value.withLockedValue { $0 } }
    }

    private let count: Count
    private let limit: Int
    private var counted = false
    private var admitted = true
    /// Once a refusal is written, everything else the client sends is ignored.
    private var refused = false

    init(count: Count, limit: Int) {
        self.count = count
        self.limit = limit
    }

    func handlerAdded(context: ChannelHandlerContext) {
        counted = true
        admitted = count.open(limit: limit)
    }

    func handlerRemoved(context: ChannelHandlerContext) { release() }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    private func release() {
        if counted { counted = false; count.close() }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if refused { return }
        if !admitted, case .head = unwrapInboundIn(data) {
            refuse(context: context, status: .serviceUnavailable, reason: "too many connections; retry shortly\n",
                   extra: [.retryAfter: "1"])
            return
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let parse = error as? HTTPParserError, parse == .headerOverflow {
            refuse(context: context, status: .requestHeaderFieldsTooLarge, reason: "request headers too large\n", extra: [:])
            return
        }
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
