import ArgumentParser
import Filters
import Foundation
import Logging
import Pipeline
import Serving
import Synchronization

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a folder of HLS output over HTTP, with a player page at /.")

    @Argument(help: "The folder to serve.")
    var folder: String

    @Option(help: "Address to listen on, HOST:PORT.")
    var listen: ListenAddress = ListenAddress(argument: "127.0.0.1:8080")!

    @Option(help: "The playlist the player page plays (default: master.m3u8, index.m3u8 or the first one).")
    var playlist: String?

    @OptionGroup var logging: LoggingOptions
    @OptionGroup var http: HTTPOptions

    func run() async throws {
        logging.bootstrap()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CommandFailure("'\(folder)' is not a folder", code: .inputUnreadable)
        }
        let signals = StopSignals()
        let server = try await Serving.start(folder: folder, playlist: playlist, status: nil, at: listen, limits: http.limits)
        Terminal.line("serving \(folder) at \(server.baseURL)/ (Ctrl-C to stop)")
        await Serving.keepServing(server, until: signals, announce: false)
    }
}

/// `--log-level`: what the library's swift-log messages show on stderr.
struct LoggingOptions: ParsableArguments {
    @Option(help: "Log messages at this level and above to stderr: trace, debug, info, notice, warning, error, critical.")
    var logLevel: LogLevel = .warning

    enum LogLevel: String, ExpressibleByArgument, CaseIterable {
        case trace, debug, info, notice, warning, error, critical
        var level: Logger.Level { Logger.Level(rawValue: rawValue) ?? .warning }
    }

    /// Installs the handler once per process (swift-log allows one bootstrap).
    func bootstrap() {
        let level = logLevel.level
        LoggingOptions.once.withLock { done in
            guard !done else { return }
            done = true
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return RedactingLogHandler(handler)
            }
        }
    }

    private static let once = Mutex(false)
}

/// Bounds of the HTTP server (serve, run --serve).
struct HTTPOptions: ParsableArguments {
    @Option(help: "HTTP: most connections open at once; more are answered 503.")
    var maxConnections = 1024

    @Option(help: "HTTP: most connections open at once from one client address; more are answered 429. Behind a reverse proxy on this machine, raise it to --max-connections.")
    var maxConnectionsPerClient = 64

    @Option(help: "HTTP: seconds before an idle connection is closed.")
    var idleTimeout = 60

    var limits: HTTPLimits {
        var limits = HTTPLimits()
        limits.maxConnections = max(1, maxConnections)
        limits.maxConnectionsPerClient = max(1, maxConnectionsPerClient)
        limits.idleTimeout = .seconds(max(1, idleTimeout))
        return limits
    }
}

/// HOST:PORT for listening.
struct ListenAddress: ExpressibleByArgument, Equatable {
    var host: String
    var port: Int

    /// Reachable from this machine only.
    var isLoopback: Bool { host == "127.0.0.1" || host.hasPrefix("127.") || host == "::1" || host == "[::1]" }

    init?(argument: String) {
        guard let colon = argument.lastIndex(of: ":"), let port = Int(argument[argument.index(after: colon)...]),
              (0...65535).contains(port) else { return nil }
        host = String(argument[..<colon])
        if host.isEmpty || host == "localhost" { host = "127.0.0.1" }
        self.port = port
    }

    /// How `--help` shows a default: as the user would type it (127.0.0.1:8080).
    var defaultValueDescription: String { "\(host):\(port)" }
}

enum Serving {
    /// `run --serve` needs an HLS output; `--serve-after` needs `--serve`.
    static func validate(serve: ListenAddress?, after: Bool, output: String) throws {
        if after && serve == nil { throw ValidationError("--serve-after needs --serve HOST:PORT") }
        if serve != nil && !output.lowercased().hasSuffix(".m3u8") {
            throw ValidationError("--serve needs an HLS output (-o DIR/NAME.m3u8), got '\(output)'")
        }
    }

    /// For `run --serve`: serves the output's folder, the player page playing the output playlist
    /// (which appears with the first segment; the page retries until then) with its live chart,
    /// and the run's `/metrics` and `/status`.
    ///
    /// `publications`: the board the run's writer tells of each file it renames into place
    /// (`PublicationBoard.notify(path:)`), waking the low-latency requests held for it; nil
    /// watches the folder with inotify instead.
    static func start(output: String, at address: ListenAddress, status: RunStatus, limits: HTTPLimits,
                      chain: ChainEndpoint? = nil, publications: PublicationBoard? = nil) async throws -> HTTPService {
        let url = URL(fileURLWithPath: output)
        let folder = url.deletingLastPathComponent().path
        let server = try await start(folder: folder, playlist: url.lastPathComponent, status: status, at: address, limits: limits,
                                     chain: chain, publications: publications)
        Terminal.line("serving \(folder) at \(server.baseURL)/ (player page; playlist \(server.baseURL)/\(url.lastPathComponent); "
                      + "metrics \(server.baseURL)/metrics, \(server.baseURL)/status"
                      + (chain == nil ? ")" : "; chain \(server.baseURL)/chain)"))
        return server
    }

    /// `run --control` on its own address: `/chain` only.
    static func startControl(_ chain: ChainEndpoint, at address: ListenAddress, limits: HTTPLimits) async throws -> HTTPService {
        do {
            let server = try await HTTPService.start(host: address.host, port: address.port, limits: limits,
                                                     logger: Logger(label: "livefilter.http")) { request, context in
                try await chain.respondAlone(to: request, client: context.client)
            }
            Terminal.line("chain control at \(server.baseURL)/chain (GET shows it, PUT changes it)")
            return server
        } catch {
            throw CommandFailure("\(error)", code: .outputNotWritable)
        }
    }

    /// Serves until SIGINT or SIGTERM, then stops the server and returns (exit 0).
    static func keepServing(_ server: HTTPService, until signals: StopSignals, announce: Bool = true) async {
        if announce { Terminal.line("finished; still serving at \(server.baseURL)/ (Ctrl-C to stop)") }
        await signals.wait()
        await server.stop()
    }

    /// Serves `folder`: the static files, and Low-Latency HLS requests held on `publications`, or, when
    /// nil, on a board an inotify watch of the folder feeds (another process writes it).
    static func start(folder: String, playlist: String?, status: RunStatus?, at address: ListenAddress,
                      limits: HTTPLimits, chain: ChainEndpoint? = nil,
                      publications: PublicationBoard? = nil) async throws -> HTTPService {
        let board = publications ?? PublicationBoard()
        let watcher = publications == nil ? FolderWatcher.start(folder, board: board) : nil
        if publications == nil, watcher == nil {
            Logger(label: "livefilter.http").warning(
                "cannot watch \(folder) (inotify): low-latency requests are held until their deadline")
        }
        let files = StaticFiles(root: folder, playlist: playlist, liveStatus: status != nil, chainControl: chain != nil,
                                board: board)
        do {
            return try await HTTPService.start(host: address.host, port: address.port, limits: limits,
                                               logger: Logger(label: "livefilter.http"),
                                               onStop: { watcher?.stop() }) { request, context in
                if let status, let response = status.respond(to: request) { return response }
                if let chain, let response = try await chain.respond(to: request, client: context.client) { return response }
                return try await files.respond(to: request, context: context)
            }
        } catch {
            throw CommandFailure("\(error)", code: .outputNotWritable)
        }
    }
}

/// The pipeline's `ChainControl` as the HTTP side's `ChainController`; a change may read the
/// files `files` allows (`--control-files`).
struct LiveChainController: ChainController {
    let control: ChainControl
    let files: ChainFileAccess

    func currentChain() -> ChainState {
        let chain = control.chain
        return ChainState(chain: chain.description,
                          parameters: chain.numericParameters.map {
                              ChainState.Parameter(position: $0.position, filter: $0.filter, key: $0.key, value: $0.value,
                                                   minimum: $0.minimum, maximum: $0.maximum, integer: $0.integer)
                          },
                          changes: control.history.map { ChainState.Change(tick: $0.tick, seconds: $0.seconds, chain: $0.chain) })
    }

    func changeChain(_ text: String) async -> ChainChangeOutcome {
        do {
            let applied = try await control.change(text, files: files)
            return .applied(ChainState.Change(tick: applied.tick, seconds: applied.seconds, chain: applied.chain))
        } catch {
            switch error {
            case let .badChain(syntax): return .badChain("bad chain at '\(syntax.token)': \(syntax)")
            case let .fileNotAllowed(refused): return .forbidden(Self.refusal(refused))
            case let .changesGeometry(reason): return .conflict(reason)
            case .notRunning: return .unavailable("\(error)")
            }
        }
    }

    /// A file refused, said in the run's options; the same whether or not the file exists.
    static func refusal(_ error: ChainSyntaxError) -> String {
        guard case let .fileNotAllowed(filter, key, path, folder) = error else { return "\(error)" }
        let named = "\(filter): \(key) '\(path)' is not allowed"
        return folder
            ? named + ": a chain changed over --control reads files only in the folder --control-files names "
                + "(a relative path starts there; .. and symbolic links may not lead out)"
            : named + ": a chain changed over --control reads no files but those --chain reads; "
                + "to allow some, start the run with --control-files DIR"
    }
}
