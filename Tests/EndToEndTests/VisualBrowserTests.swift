import Foundation
import Testing

extension EndToEnd {
    /// Real playback: `scripts/browser-check.sh` makes HLS with livefilter, serves it with
    /// `livefilter serve` and plays the player page in headless Chromium. Runs only where Debian's
    /// chromium (and python3, for the DevTools client) are installed; the test never installs them.
    @Suite("Visual: browser playback")
    struct VisualBrowser {
        static let chromium = ["/usr/bin/chromium", "/usr/local/bin/chromium"].first { FileManager.default.isExecutableFile(atPath: $0) }
        static let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
        static let available = chromium != nil && python

        @Test("headless Chromium plays the served HLS: frames decoded and currentTime advancing",
              .enabled(if: available, "needs chromium and python3: run scripts/browser-check.sh (it installs chromium with apt-get)"),
              .timeLimit(.minutes(3)))
        func browserPlaysServedHLS() async throws {
            try await play([])
        }

        @Test("headless Chromium plays a sharded, joined HLS (a master with an EXT-X-MEDIA audio rendition)",
              .enabled(if: available, "needs chromium and python3: run scripts/browser-check.sh (it installs chromium with apt-get)"),
              .timeLimit(.minutes(3)))
        func browserPlaysShardedHLS() async throws {
            try await play(["--shards", "3"])
        }

        @Test("the player page of run --serve draws the live chart (fps, latency, dropped ticks): screenshot checked",
              .enabled(if: available, "needs chromium and python3: run scripts/browser-check.sh (it installs chromium with apt-get)"),
              .timeLimit(.minutes(3)))
        func liveChart() async throws {
            let binary = try LiveFilter.binary()
            let script = Paths.packageRoot.appendingPathComponent("scripts/browser-check.sh")
            let result = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/env"),
                                                  ["LIVEFILTER_BIN=\(binary.path)", "bash", script.path, "--no-install", "--seconds", "20", "--live-chart"],
                                                  timeout: .seconds(150))
            #expect(result.succeeded, "browser-check: \(result.stdoutText)\n\(result.summary)")
            let line = try #require(result.stdoutText.split(separator: "\n").first { $0.hasPrefix("browser-check: chart ") })
            let chart = try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst("browser-check: chart ".count).utf8)) as? [String: Any])
            #expect((chart["samples"] as? Int ?? 0) >= 3, "chart samples: \(chart)")
            // In the screenshot of the chart: the fps line (#4fc3f7) and the latency line (#ffb74d) are drawn.
            #expect((chart["fps_pixels"] as? Int ?? 0) >= 40, "fps line pixels: \(chart)")
            #expect((chart["latency_pixels"] as? Int ?? 0) >= 40, "latency line pixels: \(chart)")
            #expect((chart["frames"] as? Int ?? 0) > 0, "the video plays beside it: \(chart)")
        }

        @Test("the player page's chain panel: a slider per numeric parameter; moving one changes the running chain (PUT /chain, reply with the tick)",
              .enabled(if: available, "needs chromium and python3: run scripts/browser-check.sh (it installs chromium with apt-get)"),
              .timeLimit(.minutes(3)))
        func liveControl() async throws {
            let binary = try LiveFilter.binary()
            let script = Paths.packageRoot.appendingPathComponent("scripts/browser-check.sh")
            let result = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/env"),
                                                  ["LIVEFILTER_BIN=\(binary.path)", "bash", script.path, "--no-install", "--seconds", "20",
                                                   "--live-control", "--chain", "blur 2 | rotate 180"],
                                                  timeout: .seconds(150))
            #expect(result.succeeded, "browser-check: \(result.stdoutText)\n\(result.summary)")
            let line = try #require(result.stdoutText.split(separator: "\n").first { $0.hasPrefix("browser-check: control ") })
            let control = try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst("browser-check: control ".count).utf8)) as? [String: Any])
            #expect(control["ok"] as? Bool == true, "\(control)")
            #expect((control["moved"] as? [String: Any])?["sliders"] as? Int == 2, "sliders for blur.sigma and rotate.angle: \(control)")
        }

        /// hls.js, where scripts/install-hlsjs.sh puts it (or LIVEFILTER_HLSJS); never installed by the test.
        static let hlsjs = ProcessInfo.processInfo.environment["LIVEFILTER_HLSJS"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "/usr/local/share/livefilter/hls.min.js"
        static let llAvailable = available && FileManager.default.fileExists(atPath: hlsjs)

        @Test("hls.js reads the ad markers of a filtered stream: every EXT-X-DATERANGE of our playlist with its ID, START-DATE and SCTE-35 sections (made and injected by threefive)",
              .enabled(if: llAvailable, "needs chromium, python3 and hls.js: LIVEFILTER_PLAYERS=1 scripts/install-deps.sh"),
              .timeLimit(.minutes(3)))
        func adMarkersInHlsJs() async throws {
            let binary = try LiveFilter.binary()
            let script = Paths.packageRoot.appendingPathComponent("scripts/browser-check.sh")
            let result = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/env"),
                                                  ["LIVEFILTER_BIN=\(binary.path)", "LIVEFILTER_HLSJS=\(Self.hlsjs)", "bash", script.path,
                                                   "--no-install", "--seconds", "20", "--dateranges"],
                                                  timeout: .seconds(150))
            #expect(result.succeeded, "browser-check: \(result.stdoutText)\n\(result.summary)")
            let line = try #require(result.stdoutText.split(separator: "\n").first { $0.hasPrefix("browser-check: dateranges ") },
                                    "browser-check: \(result.stdoutText)\n\(result.summary)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst("browser-check: dateranges ".count).utf8)) as? [String: Any])
            let ranges = report["ranges"] as? [[String: Any]] ?? []
            // One break: the OUT's range, closed by its IN (END-DATE, DURATION 4 s, SCTE35-IN on the same tag).
            #expect(ranges.count == 1, "\(report)")
            #expect(ranges.allSatisfy { $0["ok"] as? Bool == true && $0["hlsjs_valid"] as? Bool == true }, "\(report)")
            #expect(ranges.first?["duration"] as? Double == 4, "\(report)")
        }

        @Test("hls.js plays run --serve's Low-Latency HLS (0.5 s parts, 2 s fMP4 segments) in low-latency mode: no fatal error, a viewer within 3 s",
              .enabled(if: llAvailable, "needs chromium, python3 and hls.js: LIVEFILTER_PLAYERS=1 scripts/install-deps.sh"),
              .timeLimit(.minutes(3)))
        func lowLatencyInHlsJs() async throws {
            let binary = try LiveFilter.binary()
            let script = Paths.packageRoot.appendingPathComponent("scripts/browser-check.sh")
            let result = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/env"),
                                                  ["LIVEFILTER_BIN=\(binary.path)", "LIVEFILTER_HLSJS=\(Self.hlsjs)", "bash", script.path,
                                                   "--no-install", "--seconds", "30", "--ll"],
                                                  timeout: .seconds(150))
            let line = try #require(result.stdoutText.split(separator: "\n").first { $0.hasPrefix("browser-check: ll ") },
                                    "browser-check: \(result.stdoutText)\n\(result.summary)")
            let ll = try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst("browser-check: ll ".count).utf8)) as? [String: Any])
            #expect(result.succeeded, "browser-check: \(result.stdoutText)\n\(result.summary)")
            #expect(ll["hlsjs"] is String, "hls.js played: \(ll)")
            #expect(ll["fatal_errors"] as? Int == 0, "no fatal hls.js error: \(ll)")
            let p95 = try #require(ll["latency_p95"] as? Double, "hls.latency was measured: \(ll)")
            let figures = "p50 \(ll["latency_p50"] ?? "–") s, playing-date lag p50/p95 \(ll["lag_p50"] ?? "–")/\(ll["lag_p95"] ?? "–") s, "
                + "\(ll["stalls"] ?? "–") stalls, \(ll["errors"] ?? "–") errors"
            // Low-latency mode engaged: a standard player sits three target durations (6 s) back. The
            // 2.0 s target is the benchmark's (BENCHMARKS.md), on a quiet machine; this guards the mode.
            #expect(p95 <= 3.0, "hls.latency p95 \(p95) s ≤ 3.0 s (\(figures)): \(ll)")
        }

        func play(_ extra: [String]) async throws {
            let binary = try LiveFilter.binary()
            let script = Paths.packageRoot.appendingPathComponent("scripts/browser-check.sh")
            let result = try await Subprocess.run(URL(fileURLWithPath: "/usr/bin/env"),
                                                  ["LIVEFILTER_BIN=\(binary.path)", "bash", script.path, "--no-install", "--seconds", "10"] + extra,
                                                  timeout: .seconds(120))
            #expect(result.succeeded, "browser-check: \(result.stdoutText)\n\(result.summary)")
            let stats = try #require(result.stdoutText.split(separator: "\n").first { $0.hasPrefix("browser-check: stats ") })
            let json = try #require(try JSONSerialization.jsonObject(with: Data(stats.dropFirst("browser-check: stats ".count).utf8)) as? [String: Any])
            #expect((json["frames"] as? Int ?? 0) > 0, "frames decoded: \(json)")
            let first = json["first_currentTime"] as? Double ?? 0, last = json["currentTime"] as? Double ?? 0
            #expect(last > first && last >= 1, "currentTime advanced: \(first) → \(last)")
            #expect(json["size"] as? String == "640x360")
            #expect(json["error"] == nil || json["error"] is NSNull, "player error: \(json)")
        }
    }
}
