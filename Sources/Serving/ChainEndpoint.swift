import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// What `/chain` needs of a running job; the application adapts its pipeline to it (Serving knows
/// nothing of livefilter's types).
public protocol ChainController: Sendable {
    /// The chain as it runs now, its numeric parameters and the changes so far.
    func currentChain() -> ChainState
    /// Applies `text` (a whole chain, or `[FILTER.]key=value …`) at the next tick boundary.
    func changeChain(_ text: String) async -> ChainChangeOutcome
}

/// The chain as `GET /chain` shows it (JSON: livefilter.chain/1).
public struct ChainState: Sendable, Encodable {
    public struct Parameter: Sendable, Encodable {
        public var position: Int, filter: String, key: String
        public var value: Double, minimum: Double, maximum: Double, integer: Bool

        public init(position: Int, filter: String, key: String, value: Double, minimum: Double, maximum: Double, integer: Bool) {
            (self.position, self.filter, self.key) = (position, filter, key)
            (self.value, self.minimum, self.maximum, self.integer) = (value, minimum, maximum, integer)
        }
    }

    public struct Change: Sendable, Encodable {
        public var tick: Int, seconds: Double, chain: String

        public init(tick: Int, seconds: Double, chain: String) { (self.tick, self.seconds, self.chain) = (tick, seconds, chain) }
    }

    public var schema = "livefilter.chain/1"
    public var chain: String
    public var parameters: [Parameter]
    public var changes: [Change]

    public init(chain: String, parameters: [Parameter], changes: [Change]) {
        (self.chain, self.parameters, self.changes) = (chain, parameters, changes)
    }
}

/// How a change went.
public enum ChainChangeOutcome: Sendable {
    case applied(ChainState.Change)
    /// The text does not parse (400); the message names the token.
    case badChain(String)
    /// It names a file a change may not read (403): the message names the option that allows
    /// files, and reads the same whether or not the file exists.
    case forbidden(String)
    /// It would change the output's size (409).
    case conflict(String)
    /// The run has ended (503).
    case unavailable(String)
}

/// `GET /chain` (the chain as text, or JSON with `Accept: application/json` or `?format=json`) and
/// `PUT /chain` (text body: a new chain or parameter changes), answered when the change has taken
/// effect with the tick it did at. With a token, every request needs `Authorization: Bearer TOKEN`.
/// A change refused for the files it names is logged at warning, with the request.
public struct ChainEndpoint: Sendable {
    public let controller: any ChainController
    public let token: String?
    let logger: Logger
    /// The largest body accepted: a chain is a line of text.
    public static let maxBodyBytes = 64 * 1024

    public init(controller: any ChainController, token: String?, logger: Logger = Logger(label: "livefilter.chain")) {
        self.controller = controller
        self.token = token
        self.logger = logger
    }

    /// The answer to `request` at `/chain`, nil for another path; `client` (its address) is for the log.
    public func respond(to request: Request, client: String? = nil) async throws -> Response? {
        guard request.uri.path == "/chain" else { return nil }
        let wantsJSON = request.headers[.accept]?.contains("application/json") == true
            || request.uri.queryParameters["format"].map(String.init) == "json"
        if let token, !Self.authorized(request.headers[.authorization], token: token) {
            var headers = HTTPFields()
            headers[.wwwAuthenticate] = "Bearer realm=\"livefilter\""
            return Self.text(.unauthorized, "this chain needs Authorization: Bearer TOKEN (the run's --control-token)\n", headers)
        }
        switch request.method {
        case .get, .head:
            let state = controller.currentChain()
            let response = wantsJSON ? Self.json(.ok, state) : Self.text(.ok, state.chain + "\n")
            return request.method == .head ? Response(status: response.status, headers: response.headers) : response
        case .put, .post:
            var body = request.body
            let buffer: ByteBuffer
            do {
                buffer = try await body.collect(upTo: Self.maxBodyBytes)
            } catch {
                return Self.text(.contentTooLarge, "a chain is at most \(Self.maxBodyBytes) bytes\n")
            }
            let text = String(buffer: buffer).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !text.isEmpty else {
                return Self.text(.badRequest, "empty body: send a chain (blur sigma=12 | rotate 90) or parameters (blur.sigma=12)\n")
            }
            switch await controller.changeChain(text) {
            case let .applied(change):
                return wantsJSON ? Self.json(.ok, change)
                    : Self.text(.ok, "applied at tick \(change.tick) (\(String(format: "%.3f", change.seconds)) s): \(change.chain)\n")
            case let .badChain(message): return Self.text(.badRequest, message + "\n")
            case let .forbidden(message):
                var metadata = Self.summary(of: request, body: text, client: client)
                metadata["reason"] = "\(Self.escaped(message, 400))"
                logger.warning("refused a chain change for the files it names", metadata: metadata)
                return Self.text(.forbidden, message + "\n")
            case let .conflict(message): return Self.text(.conflict, message + "\n")
            case let .unavailable(message): return Self.text(.serviceUnavailable, message + "\n")
            }
        case .options:
            return Response(status: .noContent, headers: [.allow: "GET, HEAD, PUT, POST, OPTIONS"])
        default:
            return Response(status: .methodNotAllowed, headers: [.allow: "GET, HEAD, PUT, POST, OPTIONS"])
        }
    }

    /// On a server of its own: `/chain`, and 404 for anything else.
    public func respondAlone(to request: Request, client: String? = nil) async throws -> Response {
        if let response = try await respond(to: request, client: client) { return response }
        return Self.text(.notFound, "only /chain here\n")
    }

    /// The request as a log says it: method, path, client, agent and the text sent (the client's
    /// own words, escaped and cut short; never anything read from a file).
    static func summary(of request: Request, body: String, client: String?) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["request": "\(request.method) \(escaped(request.uri.description, 200))",
                                         "body": "\(escaped(body, 300))"]
        if let client { metadata["client"] = "\(client)" }
        if let agent = request.headers[.userAgent] { metadata["user-agent"] = "\(escaped(agent, 100))" }
        return metadata
    }

    /// `text` on one line (control characters escaped, so a client cannot forge log lines), at
    /// most `limit` characters of it.
    static func escaped(_ text: String, _ limit: Int) -> String {
        let cut = text.count > limit ? String(text.prefix(limit)) + "…" : text
        return cut.unicodeScalars.map { scalar in
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator, .format: scalar.escaped(asASCII: true)
            default: scalar == "\\" ? "\\\\" : String(scalar)
            }
        }.joined()
    }

    /// Compares in time independent of where the strings differ.
    static func authorized(_ header: String?, token: String) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        let given = Array(header.dropFirst(7).utf8), expected = Array(token.utf8)
        var difference = given.count ^ expected.count
        for i in 0..<expected.count { difference |= Int(expected[i] ^ (i < given.count ? given[i] : 0)) }
        return difference == 0
    }

    static func text(_ status: HTTPResponse.Status, _ text: String, _ extra: HTTPFields = [:]) -> Response {
        var headers = extra
        headers[.contentType] = "text/plain; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func json(_ status: HTTPResponse.Status, _ value: some Encodable) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return Response(status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
