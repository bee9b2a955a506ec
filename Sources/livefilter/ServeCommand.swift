import ArgumentParser
import Foundation
import HTTPServer
import Pipeline

struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a folder of HLS output over HTTP, with a player page at /.")

    @Argument(help: "The folder to serve.")
    var folder: String

    @Option(help: "Address to listen on, HOST:PORT.")
    var listen: ListenAddress = ListenAddress(argument: "127.0.0.1:8080")!

    @Option(help: "The playlist the player page plays (default: master.m3u8, index.m3u8 or the first one).")
    var playlist: String?

    func run() throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CommandFailure("'\(folder)' is not a folder", code: .inputUnreadable)
        }
        let server = try Serving.start(folder: folder, playlist: playlist, at: listen)
        Terminal.line("serving \(folder) at \(server.baseURL)/ (Ctrl-C to stop)")
        let signals = StopSignals()
        while signals.signal == nil { usleep(100_000) }
        server.stop()
    }
}

/// HOST:PORT for listening.
struct ListenAddress: ExpressibleByArgument {
    var host: String
    var port: Int

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
    /// (which appears with the first segment; the page retries until then).
    static func start(output: String, at address: ListenAddress) throws -> HTTPServer {
        let url = URL(fileURLWithPath: output)
        let folder = url.deletingLastPathComponent().path
        let server = try start(folder: folder, playlist: url.lastPathComponent, at: address)
        Terminal.line("serving \(folder) at \(server.baseURL)/ (player page; playlist \(server.baseURL)/\(url.lastPathComponent))")
        return server
    }

    /// The job; with `--serve` on a file input and no `--hls-playlist`, the playlist is EVENT instead of
    /// VOD, so it is published after every segment and the page plays during the run (ENDLIST at the end).
    static func job(_ config: JobConfiguration, serving: Bool) throws(JobError) -> TranscodeJob {
        let job = try TranscodeJob(configuration: config)
        guard serving, config.hlsPlaylistType == nil, !job.demuxer.isLive else { return job }
        var event = config
        event.hlsPlaylistType = .event
        return try TranscodeJob(configuration: event)
    }

    /// After the run (`--serve-after`): serves until SIGINT or SIGTERM, then returns (exit 0).
    static func keepServing(_ server: HTTPServer, until signals: StopSignals) {
        Terminal.line("finished; still serving at \(server.baseURL)/ (Ctrl-C to stop)")
        while signals.signal == nil { usleep(100_000) }
        server.stop()
    }

    static func start(folder: String, playlist: String?, at address: ListenAddress) throws -> HTTPServer {
        let files = StaticFiles(root: folder, playlist: playlist)
        do {
            let server = try HTTPServer(host: address.host, port: address.port) { files.respond(to: $0) }
            server.start()
            return server
        } catch {
            throw CommandFailure("\(error)", code: .outputNotWritable)
        }
    }
}
