import Foundation
import Hummingbird
import Serving
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A loopback HTTP server answering from a table of routes, for playlists no honest packager writes
/// (absurd EXTINF, a master that lists itself, references to local files and other schemes), with
/// segments taken from an `HLSTestServer`'s folder. Routes can be replaced while it runs (a live
/// playlist that stops updating).
final class PlaylistServer: @unchecked Sendable {
    private let lock = NSLock()
    private var routes: [String: @Sendable (Request) -> Response] = [:]
    private var requests: [String] = []
    private var server: HTTPService!

    private init() {}

    static func start() async throws -> PlaylistServer {
        let playlists = PlaylistServer()
        playlists.server = try await HTTPService.start(host: "127.0.0.1", port: 0) { [playlists] request, _ in playlists.respond(request) }
        return playlists
    }

    var baseURL: String { server.baseURL }
    func url(_ path: String) -> String { baseURL + path }
    func stop() { server.shutdown() }

    /// Paths requested so far, in order.
    var requestLog: [String] { lock.withLock { requests } }

    func route(_ path: String, _ handler: @escaping @Sendable (Request) -> Response) {
        lock.withLock { routes[path] = handler }
    }

    /// Serves `text` as a playlist at `path`.
    func playlist(_ path: String, _ text: String) {
        route(path) { _ in .playlist(text) }
    }

    /// Serves every file of `folder` under `/name`.
    func files(in folder: URL) throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            let file = folder.appendingPathComponent(name)
            route("/" + name) { _ in
                guard let data = FileManager.default.contents(atPath: file.path) else { return .text(.notFound, "gone") }
                return Response(status: .ok, headers: [.contentType: "video/mp2t"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
            }
        }
    }

    private func respond(_ request: Request) -> Response {
        let path = request.uri.path.removingPercentEncoding ?? request.uri.path
        let handler = lock.withLock { () -> (@Sendable (Request) -> Response)? in
            requests.append(path)
            return routes[path]
        }
        return handler?(request) ?? .text(.notFound, "not found")
    }

    /// A media playlist over `segments` (name, EXTINF text), with ENDLIST unless `live`.
    static func mediaPlaylist(_ segments: [(String, String)], target: Int = 2, sequence: Int = 0, live: Bool = false) -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:\(target)", "#EXT-X-MEDIA-SEQUENCE:\(sequence)"]
        for (name, extinf) in segments { lines += ["#EXTINF:\(extinf),", name] }
        if !live { lines.append("#EXT-X-ENDLIST") }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// Samples a running process's resident memory and open descriptors from /proc.
struct ProcessSample: Sendable {
    var residentKB: Int
    var openFiles: Int

    init?(pid: Int32) {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kb = Int(line.split(whereSeparator: \.isWhitespace).dropFirst().first ?? ""),
              let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else { return nil }
        residentKB = kb
        openFiles = fds.count
    }
}

/// Runs `livefilter ARGS…` through `bash -c` with shell limits or settings first (`ulimit -f 200`,
/// `umask 077`), so the limit applies to livefilter alone.
func livefilterInShell(_ prelude: String, _ arguments: [String], timeout: Duration = .seconds(120)) async throws -> ProcessResult {
    let binary = try LiveFilter.binary()
    let quoted = ([binary.path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
    return try await Subprocess.run(URL(fileURLWithPath: "/bin/bash"), ["-c", "\(prelude); exec \(quoted.joined(separator: " "))"],
                                    timeout: timeout)
}

/// Elapsed wall time of `body`, in seconds.
func timed<T>(_ body: () async throws -> T) async rethrows -> (T, Double) {
    let start = ContinuousClock.now
    let value = try await body()
    let elapsed = ContinuousClock.now - start
    return (value, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

/// Exit codes the `ExitCode` enum of LiveFilter.swift does not list.
enum MoreExitCodes {
    static let inputStalled: Int32 = 9
    static let inputTooLarge: Int32 = 10
    static let terminated: Int32 = 143
}

/// `LiveFilter.expectError` for any status: exit `code`, one `livefilter: error:` line, no crash.
func expectOneLineError(_ result: ProcessResult, _ code: Int32, mentioning needle: String? = nil,
                        sourceLocation: SourceLocation = #_sourceLocation) {
    if let known = ExitCode(rawValue: code) {
        LiveFilter.expectError(result, known, mentioning: needle, sourceLocation: sourceLocation)
        return
    }
    #expect(result.exitedNormally && !result.timedOut && result.status == code, "expected exit \(code): \(result.summary)",
            sourceLocation: sourceLocation)
    let errors = result.stderrLines.filter { !$0.hasPrefix("livefilter: warning:") }
    #expect(errors.count == 1 && errors[0].hasPrefix("livefilter: error:"), "one error line expected:\n\(result.stderrText)",
            sourceLocation: sourceLocation)
    #expect(!result.stderrText.contains("Fatal error") && !result.stderrText.contains("Program crashed"), "\(result.stderrText)",
            sourceLocation: sourceLocation)
    if let needle {
        #expect(result.stderrText.contains(needle), "should mention '\(needle)': \(result.stderrText)", sourceLocation: sourceLocation)
    }
}
