import Foundation
import Testing

extension EndToEnd {
    @Test("missing input exits 4")
    func missingInput() async throws {
        let sandbox = try Sandbox("err")
        defer { sandbox.remove() }
        let result = try await LiveFilter.run(["run", sandbox.file("nope.mp4").path, "-o", sandbox.file("out.mp4").path])
        LiveFilter.expectError(result, .inputUnreadable)
        #expect(try sandbox.contents().isEmpty)
    }

    @Test("a text file named .mp4 exits 5")
    func notMedia() async throws {
        let sandbox = try Sandbox("err")
        defer { sandbox.remove() }
        let input = sandbox.file("x.mp4")
        try Data("this is not a video\n".utf8).write(to: input)
        let result = try await LiveFilter.run(["run", input.path, "-o", sandbox.file("out.mp4").path])
        LiveFilter.expectError(result, .notMedia)
        #expect(try sandbox.contents() == ["x.mp4"])
    }

    @Test("audio-only input exits 6")
    func noVideo() async throws {
        let sandbox = try Sandbox("err")
        defer { sandbox.remove() }
        let input = sandbox.file("tone.m4a")
        try await ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1", "-c:a", "aac", input.path])
        let result = try await LiveFilter.run(["run", input.path, "-o", sandbox.file("out.mp4").path])
        LiveFilter.expectError(result, .noVideo)
        #expect(try sandbox.contents() == ["tone.m4a"])
    }

    @Test("a missing output folder is made (HLS, MP4, PNG); a run that fails removes what it made")
    func missingOutputFolder() async throws {
        let sandbox = try Sandbox("err")
        defer { sandbox.remove() }
        for (name, made) in [("hls/live/index.m3u8", "hls/live/index.m3u8"), ("no/such/dir/out.mp4", "no/such/dir/out.mp4"),
                             ("frames/a/%03d.png", "frames/a/001.png")] {
            let result = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", sandbox.file(name).path,
                                                   "--max-duration", "0.5", "-q"])
            try LiveFilter.requireSuccess(result)
            let present = try sandbox.contents()
            #expect(FileManager.default.fileExists(atPath: sandbox.file(made).path), "\(name): \(present)")
        }
        let failing = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/env"),
                                               ["LIVEFILTER_FAULT_ENCODER_AFTER=3", try LiveFilter.binary().path, "run",
                                                Sample.landscape.url.path, "-o", sandbox.file("new/deeper/out.mp4").path])
        LiveFilter.expectError(failing, .processingFailed)
        #expect(!FileManager.default.fileExists(atPath: sandbox.file("new").path), "the folders it made are gone")
    }

    @Test("existing output without --overwrite exits 8 and leaves it alone")
    func existingOutput() async throws {
        let sandbox = try Sandbox("err")
        defer { sandbox.remove() }
        let output = sandbox.file("out.mp4")
        let original = Data("precious bytes\n".utf8)
        try original.write(to: output)
        let before = try FileManager.default.attributesOfItem(atPath: output.path)[.modificationDate] as? Date

        let result = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", output.path])
        LiveFilter.expectError(result, .outputExists)
        #expect(try Data(contentsOf: output) == original)
        #expect(try FileManager.default.attributesOfItem(atPath: output.path)[.modificationDate] as? Date == before)
        #expect(try sandbox.contents() == ["out.mp4"])

        // And with -y it is replaced by a real video.
        let again = try await LiveFilter.run(["run", Sample.noAudio.url.path, "-o", output.path, "-y", "--quiet"])
        try LiveFilter.requireSuccess(again)
        #expect(try await FFprobe.probe(output).video?.codecName == "h264")
    }

    @Test("bad filter chain exits 3 and names the token", arguments: [
        ("blurr 3", "blurr"),
        ("blur sigma=2 | mirorr", "mirorr"),
        ("rotate 90 sideways", "sideways"),
        ("scale fit=12x", "12x"),
    ])
    func badChain(chain: String, token: String) async throws {
        let sandbox = try Sandbox("err")
        defer { sandbox.remove() }
        let result = try await LiveFilter.run([
            "run", Sample.landscape.url.path, "-o", sandbox.file("out.mp4").path, "--chain", chain,
        ])
        LiveFilter.expectError(result, .badChain, mentioning: token)
        #expect(try sandbox.contents().isEmpty)
    }

    @Test("bad chain file exits 3")
    func badChainFile() async throws {
        let sandbox = try Sandbox("err")
        defer { sandbox.remove() }
        let chain = sandbox.file("bad.chain")
        try Data("# a comment\nblur sigma=2\nblurr 3\n".utf8).write(to: chain)
        let result = try await LiveFilter.run([
            "run", Sample.landscape.url.path, "-o", sandbox.file("out.mp4").path, "--chain-file", chain.path,
        ])
        LiveFilter.expectError(result, .badChain, mentioning: "blurr")
    }

    @Test("usage errors exit 2", arguments: [
        ["--crf", "20", "--video-bitrate", "1M"],
        ["--chain", "mirror", "--chain-file", Paths.packageRoot.appendingPathComponent("filters/soft-focus.chain").path],
        ["--orientation", "sideways"],
        ["--profile", "ultra"],
        ["--frobnicate"],
    ])
    func usageErrors(options: [String]) async throws {
        let sandbox = try Sandbox("err")
        defer { sandbox.remove() }
        let result = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", sandbox.file("out.mp4").path] + options)
        LiveFilter.expectError(result, .usage)
        #expect(try sandbox.contents().isEmpty)
    }

    /// Every preset in filters/ parses and runs (on a short clip).
    @Test("preset chains in filters/ run", arguments: try FileManager.default
        .contentsOfDirectory(atPath: Paths.packageRoot.appendingPathComponent("filters").path)
        .filter { $0.hasSuffix(".chain") }.sorted())
    func presets(name: String) async throws {
        let sandbox = try Sandbox("preset")
        defer { sandbox.remove() }
        let output = sandbox.file("out.mp4")
        let result = try await LiveFilter.run([
            "run", Sample.landscape.url.path, "-o", output.path,
            "--chain-file", Paths.packageRoot.appendingPathComponent("filters/\(name)").path, "--quiet",
        ])
        try LiveFilter.requireSuccess(result)
        #expect(try await FFprobe.probe(output).video?.codecName == "h264")
    }
}
