import Foundation
import Hummingbird
import Serving

/// A folder served over loopback as `livefilter serve` serves it (`StaticFiles`: byte ranges with
/// 206/416, HEAD, the HLS MIME types), with a log of every request and, per path, a fault in place
/// of the file: a 404 or a 302. For inputs an honest server gives — single-file byte ranges, keys,
/// redirects — where `PlaylistServer` (whole files, no ranges) falls short.
/// Binds 127.0.0.1 only; stops with `stop()` (tests call it in `defer`).
final class FolderServer: @unchecked Sendable {
    /// What a path answers instead of the file under it.
    enum Route: Sendable {
        case notFound
        /// 302 with this `Location` (absolute URL or a path on this server).
        case redirect(String)
    }

    /// One request as received: its path and its `Range` header, if any.
    struct Logged: Sendable {
        var path: String
        var range: String?
    }

    let folder: URL
    private let files: StaticFiles
    private let lock = NSLock()
    private var routes: [String: Route] = [:]
    private var log: [Logged] = []
    private var server: HTTPService!

    private init(folder: URL) {
        self.folder = folder
        files = StaticFiles(root: folder.path)
    }

    static func start(_ folder: URL) async throws -> FolderServer {
        let served = FolderServer(folder: folder)
        served.server = try await HTTPService.start(host: "127.0.0.1", port: 0) { [served] request, context in
            try await served.respond(request, context)
        }
        return served
    }

    var baseURL: String { server.baseURL }
    /// The URL of `path` ("/media/index.m3u8") on this server.
    func url(_ path: String) -> String { baseURL + path }
    func stop() { server.shutdown() }

    /// Answers `path` with `route` from now on, whatever the folder holds there.
    func route(_ path: String, _ route: Route) {
        lock.withLock { routes[path] = route }
    }

    /// Every request so far, in order.
    var requests: [Logged] { lock.withLock { log } }

    /// How many requests asked for `path`.
    func count(_ path: String) -> Int { requests.filter { $0.path == path }.count }

    private func respond(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let path = request.uri.path.removingPercentEncoding ?? request.uri.path
        let route = lock.withLock { () -> Route? in
            log.append(Logged(path: path, range: request.headers[.range]))
            return routes[path]
        }
        switch route {
        case .notFound?: return .text(.notFound, "not found")
        case let .redirect(location)?: return Response(status: .found, headers: [.location: location])
        case nil: return try await files.respond(to: request, context: context)
        }
    }
}
