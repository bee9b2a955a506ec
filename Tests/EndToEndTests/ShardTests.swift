import Foundation
import Testing

extension EndToEnd {
    /// Scale-out: one job split into shards and joined must be the single run's output — frame
    /// count, timestamps, segments and audio samples equal, every picture ≥ 45 dB against the single
    /// run (the oracle is ffmpeg's psnr filter) — on a real one-node Slurm (scripts/slurm-local.sh,
    /// inside a PID namespace that dies with the test), and as plain processes with the index
    /// variables Kubernetes Indexed Jobs and AWS Batch array jobs set.
    @Suite("Scale-out: shards and join", .serialized)
    struct Shards {
        static let slurmScript = Paths.packageRoot.appendingPathComponent("scripts/slurm-local.sh")
        static let slurmInstalled = ["/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch", "/usr/sbin/munged"]
            .allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }

        /// The three kinds of input the issue names: a rotated phone clip, a 25 fps clip with 5.1
        /// audio (made here from the bundled transport stream's pictures by the ffmpeg CLI), a VFR clip.
        static func inputs(in sandbox: Sandbox) async throws -> [URL] {
            let surround = sandbox.file("surround-25fps.mp4")
            try await ffmpeg(["-i", Paths.sample("transport.ts").path, "-af",
                              "pan=5.1|c0=c0|c1=c1|c2=0.5*c0+0.5*c1|c3=0.1*c0|c4=c0|c5=c1",
                              "-c:v", "copy", "-c:a", "aac", "-b:a", "256k", surround.path])
            return [Paths.sample("portrait-rotated.mp4"), surround, Paths.sample("vfr.mkv")]
        }

        @Test("N=4 on a real Slurm equals the single run (MP4 and HLS, three inputs)",
              .enabled(if: slurmInstalled, "Slurm is not installed: LIVEFILTER_PLAYERS=1 scripts/install-deps.sh installs it"),
              .timeLimit(.minutes(8)))
        func slurmMatchesSingleRun() async throws {
            let sandbox = try Sandbox("shards-slurm")
            defer { sandbox.remove() }
            let binary = try LiveFilter.binary()
            let inputs = try await Self.inputs(in: sandbox)
            let chain = "blur 3 | scale fit=480x480"
            var script = "set -e\n"
            for (i, input) in inputs.enumerated() {
                let common = "--chain '\(chain)' --encoder-preset veryfast"
                script += "'\(binary.path)' run '\(input.path)' -o '\(sandbox.file("\(i)-split.mp4").path)' \(common) --shards 4 --engine slurm -q\n"
                script += "'\(binary.path)' run '\(input.path)' -o '\(sandbox.file("\(i)-hls/index.m3u8").path)' \(common) --hls-time 1 --shards 4 --engine slurm -q\n"
            }
            // A task that fails (the encoder's fault injection, inherited through sbatch): exit 14,
            // naming the task and its log; no output.
            script += "set +e\nLIVEFILTER_FAULT_ENCODER_AFTER=3 '\(binary.path)' run '\(inputs[0].path)' -o '\(sandbox.file("failed.mp4").path)' --shards 2 --engine slurm -q 2> '\(sandbox.file("failed.err").path)'\n"
            script += "echo $? > '\(sandbox.file("failed.status").path)'\nexit 0\n"
            for i in inputs.indices { try FileManager.default.createDirectory(at: sandbox.file("\(i)-hls"), withIntermediateDirectories: true) }
            // In a PID namespace that dies with this process, a killed test takes the cluster with it;
            // where namespaces are not allowed, `with` still stops the cluster when the script ends.
            let cluster = ["bash", Self.slurmScript.path, "with", sandbox.file("cluster").path, "bash", "-c", script]
            let isolated = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/unshare"),
                                                    ["--pid", "--fork", "--kill-child", "--mount-proc", "true"]).succeeded
            let result = isolated
                ? try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/unshare"),
                                           ["--pid", "--fork", "--kill-child", "--mount-proc"] + cluster, timeout: .seconds(360))
                : try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/env"), cluster, timeout: .seconds(360))
            try #require(result.succeeded, "sharded runs on Slurm: \(result.summary)")
            let failedStatus = try String(contentsOf: sandbox.file("failed.status"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let failedErr = try String(contentsOf: sandbox.file("failed.err"), encoding: .utf8)
            #expect(failedStatus == "14", "a failed task exits 14: \(failedStatus) \(failedErr)")
            #expect(failedErr.contains("task-") && failedErr.contains(".log"), "names the task's log: \(failedErr)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.file("failed.mp4").path))
            for (i, input) in inputs.enumerated() {
                let common = ["--chain", chain, "--encoder-preset", "veryfast", "-q"]
                try LiveFilter.requireSuccess(try await LiveFilter.run(["run", input.path, "-o", sandbox.file("\(i)-single.mp4").path,
                                                                       "--keyframes-at-source"] + common))
                try FileManager.default.createDirectory(at: sandbox.file("\(i)-single-hls"), withIntermediateDirectories: true)
                try LiveFilter.requireSuccess(try await LiveFilter.run(["run", input.path, "-o", sandbox.file("\(i)-single-hls/index.m3u8").path,
                                                                       "--hls-time", "1"] + common))
                let name = input.lastPathComponent
                try await ShardCheck.expectSame(single: sandbox.file("\(i)-single.mp4"), joined: sandbox.file("\(i)-split.mp4"), name)
                try await ShardCheck.expectSame(single: sandbox.file("\(i)-single-hls/index.m3u8"),
                                                joined: sandbox.file("\(i)-hls/index.m3u8"), name + " (HLS)")
                // Segment boundaries and durations: the video playlist's EXTINFs are the single run's.
                let singleList = try String(contentsOf: sandbox.file("\(i)-single-hls/index.m3u8"), encoding: .utf8)
                let joinedList = try String(contentsOf: sandbox.file("\(i)-hls/index_video.m3u8"), encoding: .utf8)
                #expect(ShardCheck.extinfs(singleList) == ShardCheck.extinfs(joinedList), "\(name): segment durations")
                let master = try String(contentsOf: sandbox.file("\(i)-hls/index.m3u8"), encoding: .utf8)
                #expect(master.contains("#EXT-X-MEDIA:TYPE=AUDIO"), "\(name): master has the audio rendition:\n\(master)")
                // Independent players: GStreamer plays every frame of the joined master.
                if let frames = try await ShardCheck.gstreamerFrames(sandbox.file("\(i)-hls/index.m3u8")) {
                    let expected = try await FFprobe.videoFrames(sandbox.file("\(i)-single-hls/index.m3u8")).count
                    #expect(frames == expected, "\(name): GStreamer played \(frames) frames of \(expected)")
                }
                // The parts are gone after the join; the logs stay.
                let parts = try sandbox.contents(of: "\(i)-split.mp4.parts")
                #expect(!parts.contains { $0.hasPrefix("shard-") }, "\(parts)")
                #expect(parts.contains("logs"))
            }
        }

        @Test("PNG frames from shards run with JOB_COMPLETION_INDEX (Kubernetes) are bit-identical")
        func kubernetesIndexPNG() async throws {
            let sandbox = try Sandbox("shards-k8s")
            defer { sandbox.remove() }
            try FileManager.default.createDirectory(at: sandbox.file("single"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: sandbox.file("split"), withIntermediateDirectories: true)
            let input = Paths.sample("landscape.mp4").path
            let chain = ["--chain", "blur 2 | rotate 90 | scale fit=200x200", "--fps", "24"]
            try LiveFilter.requireSuccess(try await LiveFilter.run(["run", input, "-o", sandbox.file("single/%05d.png").path, "-q"] + chain))
            let plan = sandbox.file("plan.json").path
            try LiveFilter.requireSuccess(try await LiveFilter.run(["plan", input, "-o", sandbox.file("split/%05d.png").path,
                                                                   "--shards", "3", "--plan", plan] + chain))
            try await ShardCheck.runTasks(plan: plan, variable: "JOB_COMPLETION_INDEX")
            try LiveFilter.requireSuccess(try await LiveFilter.run(["join", plan, "-q"]))
            let single = try sandbox.contents(of: "single"), split = try sandbox.contents(of: "split").filter { $0.hasSuffix(".png") }
            #expect(single.count == 120, "5 s at 24 fps: \(single.count) frames")
            #expect(single == split, "frame names")
            for name in single {
                let a = try Data(contentsOf: sandbox.file("single/\(name)")), b = try Data(contentsOf: sandbox.file("split/\(name)"))
                #expect(a == b, "\(name) differs")
            }
        }

        @Test("MP4 from shards run with AWS_BATCH_JOB_ARRAY_INDEX equals the single run; the join is faststart")
        func awsBatchIndexMP4() async throws {
            let sandbox = try Sandbox("shards-aws")
            defer { sandbox.remove() }
            let input = Paths.sample("landscape.mp4").path
            let options = ["--chain", "mirror | blur 4", "--encoder-preset", "veryfast", "--fps", "25"]
            try LiveFilter.requireSuccess(try await LiveFilter.run(["run", input, "-o", sandbox.file("single.mp4").path, "-q",
                                                                   "--keyframes-at-source"] + options))
            let plan = sandbox.file("plan.json").path
            try LiveFilter.requireSuccess(try await LiveFilter.run(["plan", input, "-o", sandbox.file("split.mp4").path,
                                                                   "--shards", "2", "--plan", plan] + options))
            try await ShardCheck.runTasks(plan: plan, variable: "AWS_BATCH_JOB_ARRAY_INDEX")
            try LiveFilter.requireSuccess(try await LiveFilter.run(["join", plan, "-q"]))
            try await ShardCheck.expectSame(single: sandbox.file("single.mp4"), joined: sandbox.file("split.mp4"), "landscape at 25 fps")
            let bytes = try Data(contentsOf: sandbox.file("split.mp4"))
            let moov = bytes.range(of: Data("moov".utf8)), mdat = bytes.range(of: Data("mdat".utf8))
            #expect(moov != nil && mdat != nil && moov!.lowerBound < mdat!.lowerBound, "moov before mdat (faststart)")
        }

        @Test("bad cases: a killed shard, a missing part, another input, two joins, no shared disk, a live input")
        func badCases() async throws {
            let sandbox = try Sandbox("shards-bad")
            defer { sandbox.remove() }
            let input = sandbox.file("in.mp4")
            try FileManager.default.copyItem(at: Paths.sample("landscape.mp4"), to: input)
            let plan = sandbox.file("plan.json").path
            let output = sandbox.file("out.mp4").path
            try LiveFilter.requireSuccess(try await LiveFilter.run(["plan", input.path, "-o", output, "--shards", "3", "--plan", plan,
                                                                   "--encoder-preset", "ultrafast", "--fps", "120", "--chain", "blur 8"]))
            // A missing part: the join names it and its log, exits 13, and writes nothing.
            try LiveFilter.requireSuccess(try await LiveFilter.run(["run", "--plan", plan, "--shard", "0", "-q"]))
            try LiveFilter.requireSuccess(try await LiveFilter.run(["run", "--plan", plan, "--shard", "audio", "-q"]))
            var r = try await LiveFilter.run(["join", plan])
            LiveFilter.expectError(r, .partsIncomplete, mentioning: "shard 1")
            #expect(r.stderrText.contains("task-1.log"), "\(r.stderrText)")
            #expect(!FileManager.default.fileExists(atPath: output))

            // A shard killed mid-way (once it is writing its part) leaves no part; running it again
            // makes one, and clears what the killed one left.
            let work = sandbox.file("out.mp4.parts")
            let parts = try FolderWatch(work)
            defer { parts.stop() }
            let killed = try LiveFilter.start(["run", "--plan", plan, "--shard", "1", "-q"])
            defer { killed.send(SIGKILL) }
            _ = try await parts.first("shard 1's temporary part", within: .seconds(60)) { $0.hasPrefix("shard-1.tmp-") }
            killed.send(SIGKILL)
            let killedResult = await killed.wait()
            #expect(!killedResult.exitedNormally, "killed while writing: \(killedResult.summary)")
            r = try await LiveFilter.run(["join", plan])
            LiveFilter.expectError(r, .partsIncomplete, mentioning: "shard 1")
            for k in ["1", "2"] { try LiveFilter.requireSuccess(try await LiveFilter.run(["run", "--plan", plan, "--shard", k, "-q"])) }
            let left = try FileManager.default.contentsOfDirectory(atPath: work.path)
            #expect(!left.contains { $0.contains(".tmp-") }, "the killed shard's folder is cleared: \(left)")
            // Run again (an engine's retry): the part is replaced, not doubled.
            try LiveFilter.requireSuccess(try await LiveFilter.run(["run", "--plan", plan, "--shard", "2", "-q"]))

            // Two joins at once: the second finds the first's lock and says so.
            let lock = sandbox.file("out.mp4.parts/join.lock").path
            try "\(getpid()) \(ProcessInfo.processInfo.hostName)\n".write(toFile: lock, atomically: true, encoding: .utf8)
            r = try await LiveFilter.run(["join", plan])
            LiveFilter.expectError(r, .partsIncomplete, mentioning: "another join")
            try FileManager.default.removeItem(atPath: lock)
            try LiveFilter.requireSuccess(try await LiveFilter.run(["join", plan, "-q"]))
            #expect(try await FFprobe.videoFrames(URL(fileURLWithPath: output)).count == 600)

            // The plan's input replaced by another file: every shard refuses it (exit 12).
            try FileManager.default.removeItem(at: input)
            try FileManager.default.copyItem(at: Paths.sample("no-audio.mp4"), to: input)
            r = try await LiveFilter.run(["run", "--plan", plan, "--shard", "0", "-q"])
            LiveFilter.expectError(r, .inputChanged, mentioning: "not the input the plan was made from")

            // Shards that wrote to their own disks: the join sees no part and says where it looked.
            let plan2 = sandbox.file("plan2.json").path
            try LiveFilter.requireSuccess(try await LiveFilter.run(["plan", Paths.sample("landscape.mp4").path, "-o", sandbox.file("o2.mp4").path,
                                                                   "--shards", "2", "--plan", plan2]))
            var text = try String(contentsOfFile: plan2, encoding: .utf8)
            let local = sandbox.file("node-local").path
            let shared = sandbox.file("o2.mp4.parts").path
            text = text.replacingOccurrences(of: shared, with: local)
            let nodePlan = sandbox.file("node-plan.json").path
            try text.write(toFile: nodePlan, atomically: true, encoding: .utf8)
            for k in ["0", "1", "audio"] { try LiveFilter.requireSuccess(try await LiveFilter.run(["run", "--plan", nodePlan, "--shard", k, "-q"])) }
            r = try await LiveFilter.run(["join", plan2])
            LiveFilter.expectError(r, .partsIncomplete, mentioning: "file system the join can read")

            // A live input is refused: live streams scale by running one process per stream.
            try FileManager.default.createDirectory(at: sandbox.file("live"), withIntermediateDirectories: true)
            try LiveFilter.requireSuccess(try await LiveFilter.run(["run", Paths.sample("landscape.mp4").path, "-o",
                                                                   sandbox.file("live/index.m3u8").path, "--hls-time", "1", "-q"]))
            let vod = try String(contentsOf: sandbox.file("live/index.m3u8"), encoding: .utf8)
            try vod.replacingOccurrences(of: "#EXT-X-ENDLIST\n", with: "").replacingOccurrences(of: "#EXT-X-PLAYLIST-TYPE:VOD\n", with: "")
                .write(to: sandbox.file("live/live.m3u8"), atomically: true, encoding: .utf8)
            r = try await LiveFilter.run(["plan", sandbox.file("live/live.m3u8").path, "-o", sandbox.file("l.mp4").path, "--shards", "2",
                                          "--plan", sandbox.file("l.json").path, "--stall-timeout", "2"], timeout: .seconds(60))
            LiveFilter.expectError(r, .usage, mentioning: "live")
        }
    }
}

/// Comparisons of a joined output with the single run's, with ffmpeg and ffprobe as the oracles.
enum ShardCheck {
    /// Same frame count and timestamps, every frame ≥ 45 dB (ffmpeg's psnr, average of the planes),
    /// and the same decoded audio samples.
    static func expectSame(single: URL, joined: URL, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let a = try await FFprobe.videoFrames(single), b = try await FFprobe.videoFrames(joined)
        #expect(a.count == b.count, "\(name): \(a.count) frames in the single run, \(b.count) joined", sourceLocation: sourceLocation)
        #expect(a.map(\.time) == b.map(\.time), "\(name): frame timestamps differ", sourceLocation: sourceLocation)
        let stats = joined.deletingLastPathComponent().appendingPathComponent("psnr-\(UUID().uuidString).log")
        try await ffmpeg(["-i", single.path, "-i", joined.path, "-lavfi", "[0:v][1:v]psnr=stats_file=\(stats.path)", "-f", "null", "-"])
        let lines = try String(contentsOf: stats, encoding: .utf8).split(separator: "\n")
        let values = lines.compactMap { line -> Double? in
            guard let field = line.split(separator: " ").first(where: { $0.hasPrefix("psnr_avg:") }) else { return nil }
            let v = field.dropFirst("psnr_avg:".count)
            return v == "inf" ? .infinity : Double(v)
        }
        #expect(values.count == a.count, "\(name): psnr compared \(values.count) frames", sourceLocation: sourceLocation)
        let worst = values.min() ?? 0
        #expect(worst >= 45, "\(name): the worst frame is \(worst) dB against the single run", sourceLocation: sourceLocation)
        let audioA = try await audioHash(single), audioB = try await audioHash(joined)
        #expect(audioA == audioB, "\(name): decoded audio differs", sourceLocation: sourceLocation)
    }

    /// MD5 of the decoded audio samples (nil when there is no audio).
    static func audioHash(_ url: URL) async throws -> String? {
        let result = try await Subprocess.run(Paths.ffmpeg, ["-v", "error", "-i", url.path, "-map", "0:a?", "-f", "md5", "-"])
        let text = result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    static func extinfs(_ playlist: String) -> [String] {
        playlist.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }.map(String.init)
    }

    /// Runs every task of a plan as a plain process with the array index in `variable`.
    static func runTasks(plan: String, variable: String) async throws {
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: plan))) as? [String: Any]
        let shards = (json?["shards"] as? [Any])?.count ?? 0
        let tasks = shards + ((json?["audio"] as? Bool) == true ? 1 : 0)
        for k in 0..<tasks {
            let r = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/env"),
                                             ["\(variable)=\(k)", try LiveFilter.binary().path, "run", "--plan", plan, "-q"])
            try LiveFilter.requireSuccess(r)
        }
    }

    /// Video frames GStreamer's playbin hands its sink, or nil without GStreamer.
    static func gstreamerFrames(_ url: URL) async throws -> Int? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gst-launch-1.0") else { return nil }
        let r = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/gst-launch-1.0"),
                                         ["-v", "playbin", "uri=file://" + url.path, "video-sink=fakesink sync=false silent=false",
                                          "audio-sink=fakesink sync=false"], timeout: .seconds(120))
        return r.stdoutText.split(separator: "\n").filter { $0.contains("fakesink0: last-message = chain") }.count
    }
}
