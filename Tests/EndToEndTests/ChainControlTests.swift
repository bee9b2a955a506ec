import Foundation
import Testing

/// `run --control`: the chain changed while a run goes on, at a tick the reply names, seen in the
/// output's frames; what is refused and why; who may change it.
@Suite(.serialized) struct ChainControlTests {
    /// How far a picture is from grey: the mean over pixels of the largest channel difference.
    static func colourfulness(_ picture: RGBPicture) -> Double {
        var total = 0
        for i in stride(from: 0, to: picture.pixels.count, by: 3) {
            let r = Int(picture.pixels[i]), g = Int(picture.pixels[i + 1]), b = Int(picture.pixels[i + 2])
            total += max(abs(r - g), abs(g - b), abs(r - b))
        }
        return Double(total) / Double(picture.pixels.count / 3)
    }

    /// Starts `livefilter ARGS… --control 127.0.0.1:0` and returns it with the port it announces
    /// once its control server listens.
    static func startWithControl(_ arguments: [String]) async throws -> (Subprocess, Int) {
        let child = try LiveFilter.start(arguments + ["--control", "127.0.0.1:0"])
        do {
            return (child, try await LiveFilter.listeningPort(of: child, announcedBy: "chain control at "))
        } catch {
            child.send(SIGKILL)
            throw error
        }
    }

    @Test("a change during a live HLS run takes effect at the tick the reply names: the output's frame N−1 has colour, N and later are grey",
          .timeLimit(.minutes(3)))
    func liveChangeSeenAtTheReportedTick() async throws {
        let sandbox = try Sandbox("control-live")
        defer { sandbox.remove() }
        let clip = sandbox.file("clip.mp4")
        try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-t", "14", "-c:v", "libx264", "-preset", "veryfast",
                          "-g", "30", "-keyint_min", "30", "-sc_threshold", "0", "-pix_fmt", "yuv420p", clip.path])
        let server = try await HLSTestServer.make(from: clip, in: sandbox, segmentSeconds: 1, window: 5, interval: 1)
        defer { server.stop() }
        let out = sandbox.file("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let playlist = out.appendingPathComponent("index.m3u8")
        let report = sandbox.file("report.json")
        let (child, port) = try await Self.startWithControl(["run", server.liveURL, "-o", playlist.path, "--chain", "mirror",
                                                             "--hls-time", "1", "--hls-playlist", "event", "--report", report.path,
                                                             "--quiet", "--progress", "json"])
        defer { child.send(SIGKILL) }  // only if the test stopped before the child exited
        let before = try RawHTTP.request(port: port, "/chain")
        #expect(before.status == 200 && String(decoding: before.body, as: UTF8.self) == "mirror horizontal\n")
        // Change the chain once the run is two seconds (60 ticks) into its output: seconds into the run.
        let going = try await LiveFilter.progress(of: child, "60 ticks") { $0.ticks >= 60 }
        let reply = try RawHTTP.request(port: port, "/chain", method: "PUT", headers: Self.change(port).merging(["Accept": "application/json"]) { $1 },
                                        body: "mirror | grayscale", timeout: 20)
        #expect(reply.status == 200, "PUT: \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        let applied = try #require(try JSONSerialization.jsonObject(with: reply.body) as? [String: Any])
        let tick = try #require(applied["tick"] as? Int)
        #expect(applied["chain"] as? String == "mirror horizontal | grayscale")
        let result = await child.wait(timeout: .seconds(60))
        try LiveFilter.requireSuccess(result)

        // The report logs the change with the same tick.
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any])
        let changes = try #require(json["chain_changes"] as? [[String: Any]])
        #expect(changes.count == 1 && changes.first?["tick"] as? Int == tick, "report: \(changes)")

        // In the output, frame k is tick k: colour up to tick − 1, grey from tick on.
        #expect(tick >= going.framesWritten, "not applied to frames written before it was asked: tick \(tick), \(going.framesWritten) written")
        let last = try await RGBPicture.frame(of: playlist, number: tick - 1)
        let first = try await RGBPicture.frame(of: playlist, number: tick)
        let later = try await RGBPicture.frame(of: playlist, number: tick + 20)
        #expect(Self.colourfulness(last) > 30, "frame \(tick - 1) is in colour: \(Self.colourfulness(last))")
        #expect(Self.colourfulness(first) < 3, "frame \(tick) is grey: \(Self.colourfulness(first))")
        #expect(Self.colourfulness(later) < 3, "frame \(tick + 20) is grey: \(Self.colourfulness(later))")
    }

    @Test("refusals: 400 names the token, 409 a size change, 405 other methods; parameter changes; JSON state with sliders' ranges",
          .timeLimit(.minutes(2)))
    func refusalsAndParameters() async throws {
        let sandbox = try Sandbox("control-refusals")
        defer { sandbox.remove() }
        let (child, port) = try await Self.startWithControl(["run", Sample.landscape.url.path, "-o", sandbox.file("out.mp4").path,
                                                             "--realtime", "--chain", "blur 2 | rotate 90", "--quiet"])
        defer { child.send(SIGKILL) }
        func put(_ body: String) throws -> (Int, String) {
            let r = try RawHTTP.request(port: port, "/chain", method: "PUT", headers: Self.change(port), body: body, timeout: 20)
            return (r.status, String(decoding: r.body, as: UTF8.self))
        }
        let (badStatus, bad) = try put("blur 2 | rotaet 90")
        #expect(badStatus == 400 && bad.contains("'rotaet'"), "\(badStatus) \(bad)")
        let (badValueStatus, badValue) = try put("sigma=lots")
        #expect(badValueStatus == 400 && badValue.contains("sigma=lots"), "\(badValueStatus) \(badValue)")
        let (sizeStatus, size) = try put("blur 2")
        #expect(sizeStatus == 409 && size.contains("360x640"), "rotate 90 makes 360x640; without it the size changes: \(sizeStatus) \(size)")
        let (okStatus, ok) = try put("blur.sigma=7.5")
        #expect(okStatus == 200 && ok.hasPrefix("applied at tick ") && ok.contains("blur sigma=7.5 | rotate 90"), "\(okStatus) \(ok)")
        let (positionStatus, position) = try put("2.angle=-90")
        #expect(positionStatus == 200 && position.contains("rotate -90"), "\(positionStatus) \(position)")
        let (emptyStatus, _) = try put("")
        #expect(emptyStatus == 400)
        #expect(try RawHTTP.request(port: port, "/chain", method: "DELETE").status == 405)
        let state = try RawHTTP.request(port: port, "/chain?format=json")
        let json = try #require(try JSONSerialization.jsonObject(with: state.body) as? [String: Any])
        #expect(json["chain"] as? String == "blur sigma=7.5 | rotate -90")
        let parameters = try #require(json["parameters"] as? [[String: Any]])
        #expect(parameters.contains { $0["key"] as? String == "sigma" && $0["value"] as? Double == 7.5 && $0["maximum"] as? Double == 100 })
        #expect((json["changes"] as? [[String: Any]])?.count == 2)
        child.send(SIGINT)
        let result = await child.wait(timeout: .seconds(30))
        #expect(result.status == 130 || result.status == 0, "\(result.summary)")
    }

    /// A 20 s clip, so a `--realtime` run lasts while a test talks to it.
    static func clip(in sandbox: Sandbox) async throws -> URL {
        let clip = sandbox.file("clip.mp4")
        try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-t", "20", "-c:v", "libx264", "-preset", "veryfast",
                          "-pix_fmt", "yuv420p", clip.path])
        return clip
    }

    /// `shared/` holding logo.png (magenta), and beside it secret.png (green): a folder a change may read.
    static func sharedFolder(in sandbox: Sandbox) async throws -> URL {
        let folder = sandbox.file("shared")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (colour, file) in [("0xFF00FF", folder.appendingPathComponent("logo.png")), ("0x00FF00", sandbox.file("secret.png"))] {
            try await ffmpeg(["-f", "lavfi", "-i", "color=c=\(colour):s=48x48", "-frames:v", "1", file.path])
        }
        return folder
    }

    /// A change as the served page sends one: the chain's content type, from the served origin.
    static func change(_ port: Int) -> [String: String] {
        ["Content-Type": "application/x-livefilter-chain", "Origin": "http://127.0.0.1:\(port)"]
    }

    static func put(_ body: String, port: Int, json: Bool = false) throws -> (status: Int, text: String) {
        let r = try RawHTTP.request(port: port, "/chain", method: "PUT", headers: Self.change(port).merging(json ? ["Accept": "application/json"] : [:]) { $1 }, body: body,
                                    timeout: 20)
        return (r.status, String(decoding: r.body, as: UTF8.self))
    }

    @Test("without --control-files a change reads no new file: track=/etc/passwd and overlay /etc/shadow get 403 naming --control-files, in the words a missing path gets; each is logged at warning; --control-files must name a folder",
          .timeLimit(.minutes(3)))
    func filesRefusedWithoutAFolder() async throws {
        let sandbox = try Sandbox("control-files-none")
        defer { sandbox.remove() }
        for (folder, words) in [(sandbox.file("absent").path, "no such folder"), (Sample.landscape.url.path, "not a folder")] {
            let refused = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", sandbox.file("x.mp4").path,
                                                    "--control", "127.0.0.1:0", "--control-files", folder])
            LiveFilter.expectError(refused, .usage, mentioning: "--control-files")
            #expect(refused.stderrText.contains(words), "\(refused.summary)")
        }
        let alone = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", sandbox.file("y.mp4").path, "--control-files", sandbox.url.path])
        LiveFilter.expectError(alone, .usage, mentioning: "--control")

        let clip = try await Self.clip(in: sandbox)
        let (child, port) = try await Self.startWithControl(["run", clip.path, "-o", sandbox.file("out.mp4").path, "--realtime",
                                                             "--chain", "blur 2", "--quiet"])
        // Each pair: a file that exists (and holds something) and one that does not, the same words.
        let pairs = [("blur 2 track=/etc/passwd", "/etc/passwd", "blur 2 track=/nonexistent/faces.csv", "/nonexistent/faces.csv"),
                     ("overlay /etc/shadow", "/etc/shadow", "overlay /nonexistent/logo.png", "/nonexistent/logo.png"),
                     ("blur.track=/etc/passwd", "/etc/passwd", "blur.track=/nonexistent/faces.csv", "/nonexistent/faces.csv"),
                     ("text hi font=/etc/passwd", "/etc/passwd", "text hi font=/nonexistent/font.ttf", "/nonexistent/font.ttf")]
        for (existing, existingPath, missing, missingPath) in pairs {
            let a = try Self.put(existing, port: port), b = try Self.put(missing, port: port)
            #expect(a.status == 403 && a.text.contains("--control-files") && a.text.contains(existingPath), "\(existing): \(a.status) \(a.text)")
            #expect(a.status == b.status && a.text.replacingOccurrences(of: existingPath, with: "P") == b.text.replacingOccurrences(of: missingPath, with: "P"),
                    "\(existing) and \(missing) answered alike: \(a.text) / \(b.text)")
            #expect(!a.text.contains("root:"), "nothing of what the file holds")
        }
        // A client's words cannot forge a log line.
        let forged = try Self.put("overlay \"/etc/passwd\nwarning forged line\"", port: port)
        #expect(forged.status == 403, "\(forged)")
        let state = try RawHTTP.request(port: port, "/chain")
        #expect(String(decoding: state.body, as: UTF8.self) == "blur sigma=2\n", "the chain did not change")
        child.send(SIGINT)
        let result = await child.wait(timeout: .seconds(30))
        #expect(result.status == 130 || result.status == 0, "\(result.summary)")
        let warnings = result.stderrLines.filter { $0.contains("warning") && $0.contains("refused a chain change for the files it names") }
        #expect(warnings.count == 2 * pairs.count + 1, "one warning a refusal:\n\(result.stderrText)")
        #expect(!result.stderrLines.contains { $0.hasPrefix("warning forged") }, "\(result.stderrText)")
        #expect(warnings.allSatisfy { $0.contains("client=127.0.0.1:") && $0.contains("PUT /chain") }, "\(warnings)")
        #expect(!result.stderrText.contains("root:"), "nothing of what the file holds in the log")
    }

    @Test("with --control-files DIR: an overlay PNG in DIR is accepted and seen from the tick the reply names; ../ out of DIR is refused alike whether the file exists",
          .timeLimit(.minutes(3)))
    func filesWithinAFolder() async throws {
        let sandbox = try Sandbox("control-files-dir")
        defer { sandbox.remove() }
        let (clip, folder) = (try await Self.clip(in: sandbox), try await Self.sharedFolder(in: sandbox))
        let out = sandbox.file("out.mp4")
        let (child, port) = try await Self.startWithControl(["run", clip.path, "-o", out.path, "--realtime", "--chain", "grayscale",
                                                             "--control-files", folder.path, "--quiet"])
        let out1 = try Self.put("grayscale | overlay ../secret.png", port: port)
        let out2 = try Self.put("grayscale | overlay ../missing.png", port: port)
        #expect(out1.status == 403 && out1.text.contains("--control-files"), "\(out1)")
        #expect(out1.status == out2.status && out1.text.replacingOccurrences(of: "secret", with: "X") == out2.text.replacingOccurrences(of: "missing", with: "X"),
                "\(out1.text) / \(out2.text)")
        try await Task.sleep(for: .seconds(1))
        let applied = try Self.put("grayscale | overlay logo.png x=8 y=8", port: port, json: true)
        #expect(applied.status == 200, "\(applied)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(applied.text.utf8)) as? [String: Any])
        let tick = try #require(json["tick"] as? Int)
        let real = folder.resolvingSymlinksInPath().appendingPathComponent("logo.png").path
        #expect(json["chain"] as? String == "grayscale | overlay \(real) x=8 y=8", "the chain names the file it reads: \(json)")
        try await Task.sleep(for: .seconds(1))
        child.send(SIGINT)
        let result = await child.wait(timeout: .seconds(30))
        #expect(result.status == 130 || result.status == 0, "\(result.summary)")
        // Grey up to the change; the magenta logo at (8, 8) from its tick on.
        let before = try await RGBPicture.frame(of: out, number: tick - 1)
        let after = try await RGBPicture.frame(of: out, number: tick)
        func pixel(_ p: RGBPicture, _ x: Int, _ y: Int) -> (Int, Int, Int) {
            let i = (y * p.width + x) * 3
            return (Int(p.pixels[i]), Int(p.pixels[i + 1]), Int(p.pixels[i + 2]))
        }
        let (r0, g0, b0) = pixel(before, 30, 30), (r1, g1, b1) = pixel(after, 30, 30)
        #expect(max(abs(r0 - g0), abs(g0 - b0)) < 8, "frame \(tick - 1) is grey there: \((r0, g0, b0))")
        #expect(r1 > 200 && g1 < 60 && b1 > 200, "frame \(tick) shows the logo: \((r1, g1, b1))")
    }

    @Test("a token: 401 without it, 200 with it; a non-loopback address needs one (exit 2 naming --control-token)",
          .timeLimit(.minutes(2)))
    func tokens() async throws {
        let sandbox = try Sandbox("control-token")
        defer { sandbox.remove() }
        let refused = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", sandbox.file("a.mp4").path,
                                                "--control", "0.0.0.0:0"])
        LiveFilter.expectError(refused, .usage, mentioning: "--control-token")
        let (child, port) = try await Self.startWithControl(["run", Sample.landscape.url.path, "-o", sandbox.file("b.mp4").path,
                                                             "--realtime", "--control-token", "s3cret", "--quiet"])
        defer { child.send(SIGKILL) }
        let anonymous = try RawHTTP.request(port: port, "/chain")
        #expect(anonymous.status == 401 && anonymous.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        let wrong = try RawHTTP.request(port: port, "/chain", headers: ["Authorization": "Bearer s3creT"])
        #expect(wrong.status == 401)
        let put = try RawHTTP.request(port: port, "/chain", method: "PUT", headers: Self.change(port).merging(["Authorization": "Bearer s3cret"]) { $1 }, body: "invert",
                                      timeout: 20)
        #expect(put.status == 200, "\(String(decoding: put.body, as: UTF8.self))")
        #expect(try RawHTTP.request(port: port, "/other").status == 404)
        child.send(SIGINT)
        _ = await child.wait(timeout: .seconds(30))
    }
}
