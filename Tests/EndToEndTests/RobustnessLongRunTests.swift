import Foundation
import Testing

extension EndToEnd {
    /// Long runs (RELIABILITY.md, "Long runs"): 30 minutes of media through the whole pipeline keep
    /// memory, descriptors and the live HLS window on disk flat.
    @Suite("Robustness: long runs")
    struct RobustnessLongRun {
        @Test("30 min of media to a live sliding-window HLS output: RSS and fds flat, segments on disk bounded")
        func thirtyMinutes() async throws {
            let sandbox = try Sandbox("robust-long")
            defer { sandbox.remove() }
            // 30 minutes at 160x90, 10 fps, with AAC audio: small pictures keep the run short.
            let input = sandbox.file("long.mp4")
            try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=8000",
                              "-t", "1800", "-c:v", "libx264", "-preset", "ultrafast", "-g", "20", "-pix_fmt", "yuv420p",
                              "-c:a", "aac", "-b:a", "16k", "-ac", "1", input.path], timeout: .seconds(240))
            let outDir = sandbox.file("out")
            try FileManager.default.createDirectory(at: outDir, withIntermediateDirectories: true)
            let playlist = outDir.appendingPathComponent("live.m3u8")
            let listSize = 4
            let child = try LiveFilter.start(["run", input.path, "-o", playlist.path, "--chain", "blur 1.5 | mirror",
                                              "--hls-playlist", "live", "--hls-time", "2", "--hls-list-size", String(listSize),
                                              "--encoder-preset", "ultrafast", "--quiet"])
            var samples: [(time: Double, sample: ProcessSample)] = []
            var maxSegments = 0
            let started = Date()
            while child.isRunning {
                if let s = ProcessSample(pid: child.processIdentifier) { samples.append((Date().timeIntervalSince(started), s)) }
                let names = (try? FileManager.default.contentsOfDirectory(atPath: outDir.path)) ?? []
                maxSegments = max(maxSegments, names.filter { $0.hasSuffix(".ts") }.count)
                try await Task.sleep(for: .milliseconds(250))  // the measurement: four samples a second
            }
            let result = await child.wait(timeout: .seconds(10))
            try LiveFilter.requireSuccess(result)
            let wall = Date().timeIntervalSince(started)
            print("long run: \(String(format: "%.1f", wall)) s wall, \(samples.count) samples, RSS \(samples.map(\.sample.residentKB)) kB")
            #expect(wall < 150, "30 min of media in \(wall) s")
            try #require(samples.count >= 8, "too few samples: the run was too short to judge")

            // After warm-up (the first quarter), RSS grows by less than 10 MB and fds stay put.
            let warm = samples.dropFirst(samples.count / 4)
            let rss = warm.map(\.sample.residentKB)
            let fds = warm.map(\.sample.openFiles)
            #expect(rss.max()! - rss.first! < 10 * 1024, "RSS grew from \(rss.first!) to \(rss.max()!) kB")
            #expect(fds.max()! - fds.min()! <= 2, "open fds varied: \(Set(fds).sorted())")

            // The live window: at most list size + grace (default: list size) + 1 being written.
            #expect(maxSegments <= listSize + listSize + 1, "segments on disk peaked at \(maxSegments)")
            let final = try FileManager.default.contentsOfDirectory(atPath: outDir.path).filter { $0.hasSuffix(".ts") }
            #expect(final.count <= listSize + listSize + 1, "\(final.count) segments at the end")
            let info = try await FFprobe.probe(input)
            #expect((info.format?.durationSeconds ?? 0) > 1799)
        }
    }
}
