import Foundation
import Testing

extension EndToEnd {
    /// `--progress json` (livefilter.progress/1) and `--report FILE` (livefilter.report/1).
    @Suite("Visual: progress and report")
    struct VisualProgress {
        static let progressKeys = ["schema", "phase", "time", "duration", "fraction", "frames_decoded", "frames_written", "ticks",
                                   "filtered", "dropped", "repeated", "fps", "speed", "eta", "bytes", "elapsed", "stage_ms", "filter_ms"]

        /// Each non-empty line as a JSON object, or a recorded issue naming the line that does not parse.
        static func parseLines(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> [[String: Any]] {
            text.split(separator: "\n").compactMap { line in
                guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else {
                    Issue.record("not a JSON object: \(line)", sourceLocation: sourceLocation)
                    return nil
                }
                return object
            }
        }

        @Test("--progress-file: every line parses, has every field, time never goes back, ends finished at 1; the report agrees with ffprobe")
        func progressFileAndReport() async throws {
            let sandbox = try Sandbox("visual-progress")
            defer { sandbox.remove() }
            let output = sandbox.file("out.mp4"), progress = sandbox.file("progress.jsonl"), report = sandbox.file("report.json")
            let result = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", output.path,
                                                   "--chain", "blur 4 | rotate 90 | mirror | blur 2", "--fps", "15",
                                                   "--progress", "json", "--progress-file", progress.path, "--report", report.path, "--quiet"])
            try LiveFilter.requireSuccess(result)
            #expect(result.stderrText.isEmpty, "with --progress-file and --quiet nothing goes to stderr: \(result.stderrText)")

            let lines = Self.parseLines(try String(contentsOf: progress, encoding: .utf8))
            #expect(lines.count >= 2, "a few lines a second and a last one")
            var lastTime = -1.0
            for line in lines {
                #expect(line["schema"] as? String == "livefilter.progress/1")
                let missing = Self.progressKeys.filter { line[$0] == nil }
                #expect(missing.isEmpty, "missing \(missing) in \(line)")
                let time = try #require(line["time"] as? Double)
                #expect(time >= lastTime, "time went back from \(lastTime) to \(time)")
                lastTime = time
                #expect(["running", "finished"].contains(line["phase"] as? String))
                #expect(line["stage_ms"] is [String: Double])
                if let fraction = line["fraction"] as? Double { #expect((0...1).contains(fraction)) }
            }
            let last = try #require(lines.last)
            #expect(last["phase"] as? String == "finished")
            #expect(last["fraction"] as? Double == 1)
            #expect(last["eta"] as? Double == 0)
            #expect(lines.dropLast().allSatisfy { $0["phase"] as? String == "running" }, "only the last line is finished")

            // Per-filter milliseconds: one entry per pass; the quarter turn and the mirror are fused into one.
            let filterMs = try #require(last["filter_ms"] as? [String: Double])
            #expect(Set(filterMs.keys) == ["blur sigma=4", "rotate 90 + mirror horizontal", "blur sigma=2"], "\(filterMs)")
            #expect(filterMs.values.allSatisfy { $0 > 0 }, "every pass took time on every frame: \(filterMs)")
            let stageMs = try #require(last["stage_ms"] as? [String: Double])
            for stage in ["demux", "decode", "to_rgb", "filter", "to_yuv", "encode", "mux"] {
                #expect(stageMs[stage] != nil, "stage_ms.\(stage) in \(stageMs)")
            }
            // The passes add up to (a little less than) the whole chain's stage time.
            let filterStage = try #require(stageMs["filter"])
            #expect(filterMs.values.reduce(0, +) <= filterStage * 1.05 + 0.05, "\(filterMs) vs filter \(filterStage)")

            let probe = try await FFprobe.probe(output, countFrames: true)
            let frames = try #require(probe.video?.readFrames)
            #expect(frames == 75, "--fps 15 over 5 s")
            #expect(last["frames_written"] as? Int == frames)
            #expect(last["ticks"] as? Int == frames)
            #expect(last["bytes"] as? Int == (try FileManager.default.attributesOfItem(atPath: output.path)[.size] as? Int))

            let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any])
            #expect(json["schema"] as? String == "livefilter.report/1")
            #expect(json["frames_written"] as? Int == frames, "report frames_written vs ffprobe \(frames)")
            #expect(json["frames_decoded"] as? Int == 150)
            #expect((json["frames_dropped"] as? Int ?? 0) - (json["frames_repeated"] as? Int ?? 0) == 150 - frames)
            #expect(json["output_size"] as? String == "360x640")
            #expect(json["frame_rate"] as? String == "15")
            #expect(json["interrupted"] as? Bool == false)
            let reportFilters = try #require(json["filter_milliseconds"] as? [String: Double])
            #expect(Set(reportFilters.keys) == Set(filterMs.keys))
            let duration = try #require(json["duration"] as? Double)
            #expect(abs(duration - 5) <= 1.0 / 15 + 0.001)
        }

        @Test("--progress json on stderr: every stderr line is one object; a constant-rate run counts drops")
        func progressOnStderr() async throws {
            let sandbox = try Sandbox("visual-progress")
            defer { sandbox.remove() }
            let result = try await LiveFilter.run(["run", Sample.vfr.url.path, "-o", sandbox.file("out.mp4").path,
                                                   "--fps", "15", "--progress", "json", "--quiet", "--encoder-preset", "ultrafast"])
            try LiveFilter.requireSuccess(result)
            let lines = Self.parseLines(result.stderrText)
            let last = try #require(lines.last)
            #expect(last["phase"] as? String == "finished" && last["fraction"] as? Double == 1)
            let probe = try await FFprobe.probe(sandbox.file("out.mp4"), countFrames: true)
            #expect(last["frames_written"] as? Int == probe.video?.readFrames)
            #expect(last["frames_decoded"] as? Int == 73)
            let dropped = try #require(last["dropped"] as? Int), repeated = try #require(last["repeated"] as? Int)
            #expect(73 - dropped + repeated == probe.video?.readFrames, "each tick shows a decoded frame once or repeats one")
            // An empty chain has no passes.
            #expect((last["filter_ms"] as? [String: Double])?.isEmpty == true)
        }

        @Test("--progress-file without --progress json is a usage error")
        func progressFileNeedsJSON() async throws {
            let sandbox = try Sandbox("visual-progress")
            defer { sandbox.remove() }
            let result = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", sandbox.file("o.mp4").path,
                                                   "--progress-file", sandbox.file("p.jsonl").path])
            LiveFilter.expectError(result, .usage, mentioning: "--progress json")
        }
    }
}
