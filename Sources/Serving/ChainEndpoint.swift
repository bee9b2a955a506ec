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
/// `PUT /chain` (a new chain or parameter changes, sent as `application/x-livefilter-chain`),
/// answered when the change has taken effect with the tick it did at. With a token, every request
/// needs `Authorization: Bearer TOKEN`, on loopback too. A change refused for the files it names is
/// logged at warning, with the request.
///
/// Only the page this server serves, or a program, may change the chain; a web page elsewhere
/// that the operator's browser opens may not:
/// - `Host` must name the address served (421): for a loopback bind also `localhost`, `127.0.0.1`
///   or `[::1]` with its port; for a wildcard bind (`0.0.0.0`, `::`) any name. A page on another
///   site that has rebound its name to this address sends its own name.
/// - A change with an `Origin` must come from the served origin, `http(s)://` + `Host` (403).
/// - A change must be sent with `Content-Type: application/x-livefilter-chain` (415): no request
///   a page may send without a CORS preflight (a form: text/plain, urlencoded, multipart) changes
///   state, and this server answers no preflight.
public struct ChainEndpoint: Sendable {
    public let controller: any ChainController
    public let token: String?
    let logger: Logger
    /// The largest body accepted: a chain is a line of text.
    public static let maxBodyBytes = 64 * 1024
    /// The one content type a change is accepted in: not one a page may send cross-site without a
    /// preflight.
    public static let contentType = "application/x-livefilter-chain"

    public init(controller: any ChainController, token: String?, logger: Logger = Logger(label: "livefilter.chain")) {
        self.controller = controller
        self.token = token
        self.logger = logger
    }

    /// The answer to `request` at `/chain`, nil for another path; `client` (its address) is for the log.
    public func respond(to request: Request, client: String? = nil) async throws -> Response? {
        guard request.uri.path == "/chain" else { return nil }
        // Behind HTTPService the address served is known; elsewhere nothing can be checked, so nothing is answered.
        guard let served = ServedConnection.current else {
            return Self.text(.misdirectedRequest, "this endpoint is served by HTTPService only\n")
        }
        // HTTP/1's Host is the request's authority; a second Host header makes it ambiguous (refused).
        let host = request.headers[HTTPField.Name("Host")!] == nil ? request.head.authority : nil
        guard Self.hostServed(host, by: served) else {
            return Self.text(.misdirectedRequest, "Host names another address than the one this server listens on (\(served.host):\(served.port))\n")
        }
        let changes = request.method == .put || request.method == .post
        if changes, let origin = request.headers[.origin], !Self.sameOrigin(origin, host: host) {
            return Self.text(.forbidden, "the chain changes only from this server's own page or a program, not from another site\n")
        }
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
            guard Self.isChainType(request.headers[.contentType]) else {
                return Self.text(.unsupportedMediaType, "send the chain with Content-Type: \(Self.contentType)\n",
                                 [.accept: Self.contentType])
            }
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

    /// Whether `header` (the request's Host) names the address `served`.
    static func hostServed(_ header: String?, by served: ServedConnection) -> Bool {
        guard let header, let (name, port) = hostAndPort(header.lowercased()), port == served.port else { return false }
        var bound = served.host.lowercased()
        if bound.hasPrefix("["), bound.hasSuffix("]") { bound = String(bound.dropFirst().dropLast()) }
        if ["", "0.0.0.0", "::", "0:0:0:0:0:0:0:0"].contains(bound) { return true }
        if name == bound { return true }
        let loopback = bound == "localhost" || bound.hasPrefix("127.") || bound == "::1"
        return loopback && ["localhost", "127.0.0.1", "::1"].contains(name)
    }

    /// `example.com:8080` -> ("example.com", 8080); `[::1]:80` -> ("::1", 80); no port: 80.
    static func hostAndPort(_ host: String) -> (String, Int)? {
        var name = Substring(host), port = 80
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return nil }
            let rest = name[name.index(after: close)...]
            name = name[name.index(after: name.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let p = Int(rest.dropFirst()) else { return nil }
                port = p
            }
        } else if let colon = name.lastIndex(of: ":") {
            guard let p = Int(name[name.index(after: colon)...]) else { return nil }
            (name, port) = (name[..<colon], p)
        }
        return name.isEmpty ? nil : (String(name), port)
    }

    /// Whether `origin` is the origin of a page this server served at `host` (the request's Host):
    /// `http://HOST`, or `https://HOST` behind a proxy that ends TLS.
    static func sameOrigin(_ origin: String, host: String?) -> Bool {
        guard let host = host?.lowercased() else { return false }
        let origin = origin.lowercased()
        return origin == "http://" + host || origin == "https://" + host
    }

    /// Whether a Content-Type is the chain's own (parameters such as charset aside).
    static func isChainType(_ header: String?) -> Bool {
        guard let header else { return false }
        let type = header.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces).lowercased()
        return type == contentType
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
