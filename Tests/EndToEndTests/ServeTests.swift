import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEnd {
    /// `livefilter serve DIR` and `livefilter run … --serve`: what an HLS player gets over HTTP.
    @Suite("Serve")
    struct Serve {
        /// HLS from livefilter itself in `sandbox/name/`: TS segments, or fMP4 (init .mp4 + .m4s).
        func makeHLS(in sandbox: Sandbox, _ name: String, fmp4: Bool = false) async throws -> URL {
            let folder = sandbox.file(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            var arguments = ["run", Sample.noAudio.url.path, "-o", folder.appendingPathComponent("index.m3u8").path,
                             "--chain", "mirror", "--hls-time", "1", "--encoder-preset", "ultrafast", "--quiet"]
            if fmp4 { arguments += ["--hls-segment-type", "fmp4"] }
            try LiveFilter.requireSuccess(try await LiveFilter.run(arguments))
            return folder
        }

        /// Starts `livefilter serve FOLDER` on a loopback port the system picks, and returns once it
        /// says it listens there; stop it with SIGINT.
        func startServe(_ folder: URL, extra: [String] = []) async throws -> (Subprocess, Int) {
            let child = try LiveFilter.start(["serve", folder.path, "--listen", "127.0.0.1:0"] + extra)
            do {
                return (child, try await LiveFilter.listeningPort(of: child, announcedBy: "serving "))
            } catch {
                child.send(SIGKILL)
                throw error
            }
        }

        @Test("MIME types, no-cache playlists, CORS, bodies byte for byte, HEAD and OPTIONS")
        func typesAndHeaders() async throws {
            let sandbox = try Sandbox("serve")
            defer { sandbox.remove() }
            let ts = try await makeHLS(in: sandbox, "ts")
            let fmp4 = try await makeHLS(in: sandbox, "fmp4", fmp4: true)
            // One folder with every kind: the fMP4 rendition beside the TS one.
            for name in try FileManager.default.contentsOfDirectory(atPath: fmp4.path) {
                try FileManager.default.copyItem(at: fmp4.appendingPathComponent(name),
                                                 to: ts.appendingPathComponent(name == "index.m3u8" ? "fmp4.m3u8" : name))
            }
            let (server, port) = try await startServe(ts)
            defer { server.send(SIGKILL) }

            let expected: [(file: String, type: String)] = [
                ("index.m3u8", "application/vnd.apple.mpegurl"), ("fmp4.m3u8", "application/vnd.apple.mpegurl"),
                ("index_00000.ts", "video/mp2t"), ("index_init.mp4", "video/mp4"), ("index_00001.m4s", "video/iso.segment"),
            ]
            for (file, type) in expected {
                let response = try RawHTTP.request(port: port, "/" + file)
                #expect(response.status == 200, "\(file): \(response.status)")
                #expect(response.header("Content-Type") == type, "\(file): \(String(describing: response.header("Content-Type")))")
                #expect(response.header("Access-Control-Allow-Origin") == "*", "\(file): CORS")
                #expect(response.body == (try Data(contentsOf: ts.appendingPathComponent(file))), "\(file): body")
                #expect(Int(response.header("Content-Length") ?? "") == response.body.count, "\(file): Content-Length")
                let cache = response.header("Cache-Control") ?? ""
                if file.hasSuffix(".m3u8") {
                    #expect(cache.contains("no-cache"), "\(file): playlists must not be cached, got '\(cache)'")
                } else {
                    #expect(!cache.contains("no-cache"), "\(file): segments may be cached, got '\(cache)'")
                }
            }
            let head = try RawHTTP.request(port: port, "/index_00000.ts", method: "HEAD")
            #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Type") == "video/mp2t")
            let options = try RawHTTP.request(port: port, "/index.m3u8", method: "OPTIONS")
            #expect(options.status == 204)
            #expect(options.header("Access-Control-Allow-Methods")?.contains("GET") == true)
            #expect(options.header("Access-Control-Allow-Headers")?.lowercased().contains("range") == true)
            #expect(try RawHTTP.request(port: port, "/index.m3u8", method: "POST").status == 405)
            // A query string (cache busting) is ignored.
            #expect(try RawHTTP.request(port: port, "/index.m3u8?t=1").status == 200)

            server.send(SIGINT)
            let result = await server.wait(timeout: .seconds(10))
            #expect(result.succeeded, "serve stops cleanly on Ctrl-C: \(result.summary)")
        }

        @Test("nothing outside the folder: .., encoded .., symlinks out, hidden files, absolute paths → 404")
        func staysInsideTheFolder() async throws {
            let sandbox = try Sandbox("serve")
            defer { sandbox.remove() }
            let folder = try await makeHLS(in: sandbox, "hls")
            try Data("secret\n".utf8).write(to: sandbox.file("secret.txt"))
            try Data("hidden\n".utf8).write(to: folder.appendingPathComponent(".hidden.ts"))
            try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent("link.ts").path,
                                                       withDestinationPath: sandbox.file("secret.txt").path)
            let (server, port) = try await startServe(folder)
            defer { server.send(SIGKILL) }
            for target in ["/../secret.txt", "/%2e%2e/secret.txt", "/..%2fsecret.txt", "/hls/../../secret.txt",
                           "//\(sandbox.file("secret.txt").path)", "/link.ts", "/.hidden.ts", "/missing.ts", "/sub/index.m3u8"] {
                let response = try RawHTTP.request(port: port, target)
                #expect(response.status == 404, "\(target) gave \(response.status)")
                #expect(!response.text.contains("secret"), "\(target) leaked the file")
            }
            #expect(try RawHTTP.request(port: port, "/index.m3u8").status == 200)
        }

        @Test("the player page at /: a <video> whose src is the playlist, with the stats hooks")
        func playerPage() async throws {
            let sandbox = try Sandbox("serve")
            defer { sandbox.remove() }
            let folder = try await makeHLS(in: sandbox, "hls")
            let (server, port) = try await startServe(folder)
            defer { server.send(SIGKILL) }
            let page = try RawHTTP.request(port: port, "/")
            #expect(page.status == 200)
            #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(page.text.contains("<video id=\"v\" src=\"index.m3u8\""), "\(page.text.prefix(600))")
            #expect(page.text.contains("window.livefilterStats"))
            #expect(try RawHTTP.request(port: port, "/index.html").text == page.text)

            // --playlist picks another one; master.m3u8 is preferred when present.
            let (other, otherPort) = try await startServe(folder, extra: ["--playlist", "other.m3u8"])
            defer { other.send(SIGKILL) }
            #expect(try RawHTTP.request(port: otherPort, "/").text.contains("src=\"other.m3u8\""))
        }

        @Test("run --serve: the output is served while it is written, and no longer after the run")
        func runServe() async throws {
            let sandbox = try Sandbox("serve")
            defer { sandbox.remove() }
            let folder = sandbox.file("live")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            // --realtime paces the 3 s clip like a live input, so there is time to look while it runs.
            let published = try FolderWatch(folder)
            defer { published.stop() }
            let child = try LiveFilter.start(["run", Sample.noAudio.url.path, "-o", folder.appendingPathComponent("index.m3u8").path,
                                              "--realtime", "--hls-time", "1", "--encoder-preset", "ultrafast", "--quiet",
                                              "--serve", "127.0.0.1:0"])
            defer { child.send(SIGKILL) }  // only if the test stopped before the child exited
            let port = try await LiveFilter.listeningPort(of: child, announcedBy: "serving ")
            let page = try RawHTTP.request(port: port, "/")
            #expect(page.status == 200 && page.text.contains("src=\"index.m3u8\""), "the page names the output playlist at once")
            // The playlist is published (renamed into place) after the first segment; fetched then, it is
            // the open EVENT playlist of a run still going — no ENDLIST yet.
            _ = try await published.first("the playlist", within: .seconds(30)) { $0 == "index.m3u8" }
            let during = try RawHTTP.request(port: port, "/index.m3u8")
            let result = await child.wait(timeout: .seconds(30))
            try LiveFilter.requireSuccess(result)
            #expect(result.stderrText.contains("http://127.0.0.1:\(port)/"), "prints the URL: \(result.stderrText)")
            #expect(during.status == 200 && during.header("Content-Type") == "application/vnd.apple.mpegurl", "\(during.status)")
            #expect(during.text.contains("#EXTINF") && !during.text.contains("#EXT-X-ENDLIST"), "served while written:\n\(during.text)")
            // Without --serve-after the server ends with the run.
            #expect(throws: (any Error).self) { try RawHTTP.request(port: port, "/index.m3u8", timeout: 2) }
        }

        @Test("run --serve-after keeps serving the finished output until Ctrl-C, then exits 0")
        func runServeAfter() async throws {
            let sandbox = try Sandbox("serve")
            defer { sandbox.remove() }
            let folder = sandbox.file("hls")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let child = try LiveFilter.start(["run", Sample.noAudio.url.path, "-o", folder.appendingPathComponent("index.m3u8").path,
                                              "--hls-time", "1", "--encoder-preset", "ultrafast", "--quiet",
                                              "--serve", "127.0.0.1:0", "--serve-after"])
            defer { child.send(SIGKILL) }
            let port = try await LiveFilter.listeningPort(of: child, announcedBy: "serving ")
            // It says when the run is done and it goes on serving; then the finished playlist is served.
            _ = try await child.firstStderrLine("'finished; still serving'", within: .seconds(60)) { $0.hasPrefix("finished; still serving at ") }
            let playlist = try RawHTTP.request(port: port, "/index.m3u8")
            #expect(playlist.status == 200 && playlist.text.contains("#EXT-X-ENDLIST"), "the finished playlist is served: \(playlist.text)")
            #expect(try RawHTTP.request(port: port, "/index_00000.ts").status == 200)
            child.send(SIGINT)
            let result = await child.wait(timeout: .seconds(10))
            #expect(result.succeeded, "Ctrl-C ends --serve-after with exit 0: \(result.summary)")
        }

        @Test("--serve needs an HLS output; --serve-after needs --serve", arguments: [
            ["-o", "out.mp4", "--serve", "127.0.0.1:0"], ["-o", "out/index.m3u8", "--serve-after"],
            ["-o", "out/index.m3u8", "--serve", "nohost"],
        ])
        func serveUsageErrors(arguments: [String]) async throws {
            let sandbox = try Sandbox("serve")
            defer { sandbox.remove() }
            let absolute = arguments.map { $0.hasPrefix("out") ? sandbox.file($0).path : $0 }
            let result = try await LiveFilter.run(["run", Sample.noAudio.url.path] + absolute)
            LiveFilter.expectError(result, .usage)
            #expect(try sandbox.contents().isEmpty)
        }
    }
}
