import ArgumentParser
import Foundation
import HTTPServer

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
}

enum Serving {
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
