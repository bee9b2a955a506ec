import Foundation
import Testing

/// A live channel outlives its input (`--on-input-loss hold|slate`) and takes pushed inputs (RTMP,
/// SRT): publishers killed and restarted, an origin that stops and comes back restarted, hostile
/// publishers. Real ffmpeg publishers, the real binary, outputs checked with ffprobe (and GStreamer
/// where installed): continuous timestamps, every segment playable.
extension EndToEnd {
    @Suite("Channels", .serialized)
    struct ChannelTests {
        /// A TCP port free on loopback now (the system's pick).
        static func freePort() throws -> Int {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
            }
            try #require(bound, "no free port")
            return Int(UInt16(bigEndian: address.sin_port))
        }

        /// Starts a channel and returns once it says it waits for a publisher (then its listener
        /// opens within milliseconds: the publisher started next is not refused on a cold start).
        static func startChannel(_ arguments: [String]) async throws -> Subprocess {
            let channel = try LiveFilter.start(arguments)
            _ = try await channel.firstStderrLine("'waiting for a publisher'", within: .seconds(60)) { $0.contains("waiting for a publisher") }
            try await Task.sleep(for: .seconds(0.5))
            return channel
        }

        /// A small live publisher: testsrc2 320x240 at 30 fps and a tone, in real time (`-re`).
        static func publisher(_ url: String, seconds: Double, format: String = "flv", audioOnly: Bool = false) throws -> Subprocess {
            var arguments = ["-hide_banner", "-nostdin", "-v", "error", "-re"]
            if !audioOnly { arguments += ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30"] }
            arguments += ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", String(seconds)]
            if !audioOnly { arguments += ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "30"] }
            arguments += ["-c:a", "aac", "-f", format, url]
            return try Subprocess(Paths.ffmpeg, arguments)
        }

        /// Video and audio packets of an output, sorted, and the holes between them (seconds).
        struct Continuity: CustomStringConvertible {
            var videoPackets = 0, audioPackets = 0
            var videoGaps: [Double] = [], audioGaps: [Double] = []
            var videoEnd = 0.0
            var description: String {
                "\(videoPackets) video, \(audioPackets) audio packets to \(videoEnd) s; gaps video \(videoGaps) audio \(audioGaps)"
            }

            static func measure(_ playlist: URL) async throws -> Continuity {
                let result = try await Subprocess.run(Paths.ffprobe, ["-v", "error", "-show_entries", "packet=codec_type,pts_time,duration_time",
                                                                      "-of", "csv=p=0", playlist.path], timeout: .seconds(60))
                var video: [(Double, Double)] = [], audio: [(Double, Double)] = []
                for line in result.stdoutText.split(separator: "\n") {
                    let f = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                    guard f.count >= 3, let pts = Double(f[1]) else { continue }
                    let duration = Double(f[2]) ?? 0
                    if f[0] == "video" { video.append((pts, duration)) } else if f[0] == "audio" { audio.append((pts, duration)) }
                }
                func gaps(_ packets: [(Double, Double)]) -> [Double] {
                    let sorted = packets.sorted { $0.0 < $1.0 }
                    return zip(sorted, sorted.dropFirst()).compactMap { a, b in
                        let gap = b.0 - a.0 - a.1
                        return abs(gap) > 0.005 ? (gap * 1000).rounded() / 1000 : nil
                    }
                }
                var c = Continuity()
                c.videoPackets = video.count
                c.audioPackets = audio.count
                c.videoGaps = gaps(video)
                c.audioGaps = gaps(audio)
                c.videoEnd = video.map { $0.0 + $0.1 }.max() ?? 0
                return c
            }
        }

        struct Loss: Decodable { var began: String; var outputTime: Double; var seconds: Double }
        struct VideoPath: Decodable { var path: String; var seconds: Double }
        struct Report: Decodable { var inputLosses: [Loss]?; var framesDecoded: Int; var videoPaths: [VideoPath]? }

        static func report(_ file: URL) throws -> Report {
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            return try decoder.decode(Report.self, from: Data(contentsOf: file))
        }

        /// Every segment of an HLS output decodes in ffprobe (frames counted), and GStreamer's
        /// hlsdemux plays the playlist where it is installed.
        static func expectPlayable(_ playlist: URL, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let text = try String(contentsOf: playlist, encoding: .utf8)
            #expect(text.contains("#EXT-X-ENDLIST"), "finished playlist", sourceLocation: sourceLocation)
            let segments = text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }
            #expect(segments.count >= 3, "\(segments.count) segments", sourceLocation: sourceLocation)
            for name in segments {
                let file = playlist.deletingLastPathComponent().appendingPathComponent(String(name))
                let frames = try await FFprobe.probe(file, countFrames: true).video?.readFrames ?? 0
                #expect(frames > 0, "segment \(name) decodes no picture", sourceLocation: sourceLocation)
            }
            guard let gst = LowLatencyRuns.tool("gst-launch-1.0") else { return }
            let played = try await Subprocess.run(gst, ["filesrc", "location=\(playlist.path)", "!", "hlsdemux", "!", "tsdemux", "!", "h264parse",
                                                        "!", "avdec_h264", "!", "fakesink"], timeout: .seconds(60))
            #expect(played.succeeded, "GStreamer: \(played.summary)", sourceLocation: sourceLocation)
        }

        enum Push: String, CaseIterable, Sendable, CustomTestStringConvertible {
            case rtmp, srt
            var testDescription: String { rawValue.uppercased() }
            /// The channel's input URL and options, the publisher's URL and format.
            func endpoints(port: Int) -> (input: [String], publish: String, format: String) {
                switch self {
                case .rtmp: (["rtmp://127.0.0.1:\(port)/live/KEY", "--listen"], "rtmp://127.0.0.1:\(port)/live/KEY", "flv")
                case .srt: (["srt://127.0.0.1:\(port)?mode=listener&passphrase=ten-or-more-characters"],
                            "srt://127.0.0.1:\(port)?passphrase=ten-or-more-characters", "mpegts")
                }
            }
        }

        @Test("channel: a publisher killed or quitting and coming back 10 times; one continuous output, the process never exits",
              .timeLimit(.minutes(3)), arguments: Push.allCases)
        func publisherComesBack(push: Push) async throws {
            let sandbox = try Sandbox("channel-\(push.rawValue)")
            defer { sandbox.remove() }
            let port = try Self.freePort()
            let (input, url, format) = push.endpoints(port: port)
            let output = sandbox.file("out/index.m3u8")
            let reportFile = sandbox.file("report.json")
            let channel = try await Self.startChannel(["run"] + input + ["-o", output.path, "--hls-time", "1", "--hls-playlist", "event",
                                                "--on-input-loss", "hold", "--input-loss-after", "0.5", "--report", reportFile.path, "-y"])
            defer { channel.send(SIGKILL) }
            var returns: [Date] = []
            for cycle in 0..<10 {
                var publisher = try Self.publisher(url, seconds: 1.5, format: format)
                var started = Date()
                if cycle == 0 {
                    // The listener may not be up yet (a cold start): a refused publisher exits at once; try again.
                    for _ in 0..<40 {
                        try await Task.sleep(for: .seconds(0.5))
                        if publisher.isRunning { break }
                        _ = await publisher.wait(timeout: .seconds(5))
                        publisher = try Self.publisher(url, seconds: 1.5, format: format)
                        started = Date()
                    }
                }
                returns.append(started)
                if cycle % 2 == 0 {
                    // Killed half-way through, as a crashed encoder or a pulled cable.
                    try await Task.sleep(for: .seconds(cycle == 0 ? 0.7 : 1.2))
                    publisher.send(SIGKILL)
                }
                let published = await publisher.wait(timeout: .seconds(20))
                // One that was not killed published to its end: the channel did not cut it off.
                if cycle % 2 == 1 { #expect(published.succeeded, "publisher \(cycle): \(published.summary)") }
                #expect(channel.isRunning, "the channel exited after publisher \(cycle)")
                try await Task.sleep(for: .seconds(1.2))
            }
            channel.send(SIGINT)
            let result = await channel.wait(timeout: .seconds(30))
            #expect(result.exitedNormally && [0, 130].contains(result.status), "\(result.summary)")
            let continuity = try await Continuity.measure(output)
            print("channel \(push) ×10: \(continuity)")
            #expect(continuity.videoGaps.isEmpty && continuity.audioGaps.allSatisfy { abs($0) < 0.03 }, "\(continuity)")
            try await Self.expectPlayable(output)
            let report = try Self.report(reportFile)
            let losses = report.inputLosses ?? []
            #expect(losses.count == 10, "\(losses.count) losses: \(result.stderrLines.filter { $0.contains("warning") }.joined(separator: "\n"))")
            // Each return reaches the output's clock soon after the publisher's start (ffmpeg's own
            // start-up included): at the median within a segment (1 s); none waits for a later
            // accept or a timeout — SRT's peer-idle timeout made a killed publisher's successor wait
            // 3.7 s (BENCHMARKS.md "Channels" has the distribution).
            let iso = ISO8601DateFormatter()
            iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            var backs: [Double] = []
            for (loss, next) in zip(losses, returns.dropFirst()) {
                guard let began = iso.date(from: loss.began) else { continue }
                backs.append(began.addingTimeInterval(loss.seconds).timeIntervalSince(next))
            }
            print("channel \(push) ×10: returns \(backs.map { ($0 * 100).rounded() / 100 }) s")
            #expect(backs.count == 9 && backs.allSatisfy { $0 < 2.5 }, "\(backs)")
            #expect(backs.sorted()[backs.count / 2] < 1.0, "median return \(backs.sorted()[backs.count / 2]) s: \(backs)")
            #expect(result.stderrText.contains("waiting for the publisher to reconnect"))
        }

        enum Policy: String, CaseIterable, Sendable, CustomTestStringConvertible {
            case hold, slate
            var testDescription: String { rawValue }
        }

        @Test("channel: an HLS origin that stops for 5 s and comes back restarted (media sequence 1000, timestamps from 0); output continuous",
              arguments: Policy.allCases)
        func hlsOriginComesBack(policy: Policy) async throws {
            let sandbox = try Sandbox("channel-hls")
            defer { sandbox.remove() }
            let segments = try await HLSTestServer.make(from: Paths.sample("landscape.mp4"), in: sandbox, segmentSeconds: 1, reencode: true)
            defer { segments.stop() }
            let playlists = try await PlaylistServer.start()
            defer { playlists.stop() }
            try playlists.files(in: segments.folder)
            let names = segments.segments.map { ($0.name, String($0.duration)) }
            let slate = sandbox.file("slate.png")
            try await ffmpeg(["-f", "lavfi", "-i", "color=c=blue:s=320x180", "-frames:v", "1", slate.path])
            // Before: segments 0… published one a second; then nothing for 4 s; then a restarted
            // origin: sequence 1000, the clip again from its start (timestamps go back), then the end.
            let publish: @Sendable (Int, Int, [(String, String)], Bool) -> Void = { sequence, count, list, ended in
                // A sliding window of 4.
                let window = Array(list.prefix(count).suffix(4))
                playlists.playlist("/live.m3u8", PlaylistServer.mediaPlaylist(window, target: 1, sequence: sequence + max(0, count - 4), live: !ended))
            }
            publish(0, 2, names, false)
            let output = sandbox.file("out/index.m3u8")
            let reportFile = sandbox.file("report.json")
            let lossArgument = policy == .hold ? "hold" : "slate=\(slate.path)"
            let run = Task {
                try await LiveFilter.run(["run", playlists.url("/live.m3u8"), "-o", output.path, "--hls-time", "1", "--hls-playlist", "event",
                                          // Above the reload schedule's gaps while it finds the origin's phase
                                          // (a probe lets a 1 s segment go by: up to ~2 s without a packet).
                                          "--on-input-loss", lossArgument, "--input-loss-after", "2.5", "--report", reportFile.path, "-y", "-q"],
                                         timeout: .seconds(90))
            }
            for count in 3...5 { try await Task.sleep(for: .seconds(1)); publish(0, count, names, false) }
            try await Task.sleep(for: .seconds(5))
            for count in 1...4 { publish(1000, count, names, false); try await Task.sleep(for: .seconds(1)) }
            publish(1000, 4, names, true)
            let result = try await run.value
            try LiveFilter.requireSuccess(result)
            let continuity = try await Continuity.measure(output)
            print("channel HLS \(policy): \(continuity)")
            #expect(continuity.videoGaps.isEmpty && continuity.audioGaps.allSatisfy { abs($0) < 0.03 }, "\(continuity)")
            try await Self.expectPlayable(output)
            let losses = try Self.report(reportFile).inputLosses ?? []
            #expect(losses.count == 1 && (losses.first?.seconds ?? 0) > 1, "\(losses)")
            #expect(result.stderrText.contains("the origin restarted"), "\(result.stderrText)")
            // The output lasts as long as the run: the loss is in it, not cut out.
            #expect(continuity.videoEnd > 9, "\(continuity)")
            if policy == .slate, let loss = losses.first {
                // A picture in the middle of the loss is the slate (blue), shown as it is.
                let still = sandbox.file("still.png")
                try await ffmpeg(["-ss", String(loss.outputTime + 1.4 + loss.seconds / 2), "-i", output.path, "-frames:v", "1",
                                  "-vf", "scale=1:1", "-f", "rawvideo", "-pix_fmt", "rgb24", still.path])
                let rgb = try Data(contentsOf: still)
                #expect(rgb.count == 3 && rgb[2] > 150 && rgb[0] < 80 && rgb[1] < 80, "the middle of the loss is \(Array(rgb)), not the blue slate")
            }
        }

        @Test("channel: hostile publishers on the RTMP port (garbage, a wrong key, audio only) are refused; the channel stays up for the next",
              .timeLimit(.minutes(2)))
        func rtmpHostilePublishers() async throws {
            let sandbox = try Sandbox("channel-hostile")
            defer { sandbox.remove() }
            let port = try Self.freePort()
            let url = "rtmp://127.0.0.1:\(port)/live/KEY"
            let output = sandbox.file("out/index.m3u8")
            let channel = try await Self.startChannel(["run", url, "--listen", "-o", output.path, "--hls-time", "1", "--hls-playlist", "event",
                                                "--on-input-loss", "hold", "--input-loss-after", "0.5", "--io-timeout", "1", "-y"])
            defer { channel.send(SIGKILL) }
            try await Task.sleep(for: .seconds(1))
            // A byte a second: the handshake never finishes; refused after 5 s + 3 × --io-timeout.
            let trickle = try Subprocess(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", """
                import socket, time
                s = socket.create_connection(("127.0.0.1", \(port)))
                for _ in range(12):
                    try: s.send(b"\\x03"); time.sleep(1)
                    except OSError: break
                """])
            _ = await trickle.wait(timeout: .seconds(30))
            // Garbage bytes.
            let garbage = try Subprocess(URL(fileURLWithPath: "/bin/bash"),
                                         ["-c", "head -c 20000 /dev/urandom > /dev/tcp/127.0.0.1/\(port)"])
            _ = await garbage.wait(timeout: .seconds(10))
            try await Task.sleep(for: .seconds(0.5))
            // The wrong stream key.
            let wrong = try Self.publisher("rtmp://127.0.0.1:\(port)/live/WRONG", seconds: 2)
            _ = await wrong.wait(timeout: .seconds(20))
            try await Task.sleep(for: .seconds(0.5))
            // Audio only.
            let audio = try Self.publisher(url, seconds: 2, audioOnly: true)
            _ = await audio.wait(timeout: .seconds(20))
            try await Task.sleep(for: .seconds(0.5))
            #expect(channel.isRunning, "the channel exited on a hostile publisher")
            // Then a real one.
            let good = try Self.publisher(url, seconds: 2)
            _ = await good.wait(timeout: .seconds(20))
            try await Task.sleep(for: .seconds(1))
            channel.send(SIGINT)
            let result = await channel.wait(timeout: .seconds(30))
            #expect(result.exitedNormally && [0, 130].contains(result.status), "\(result.summary)")
            let log = result.stderrText
            #expect(log.contains("another app or stream key"), "wrong key not refused: \(log)")
            // The stream key is a secret: the messages name the URL without it.
            #expect(!log.contains("/live/KEY") && log.contains("/live/***"), "the stream key in the log: \(log)")
            #expect(log.contains("sends no video"), "audio only not refused: \(log)")
            #expect(log.contains("did not finish in time") || log.contains("too little to read in time"), "the trickler: \(log)")
            #expect(!log.contains("Fatal") && !log.contains("Segmentation"), "\(log)")
            let frames = try await FFprobe.probe(output, countFrames: true).video?.readFrames ?? 0
            #expect(frames >= 40, "the good publisher's pictures: \(frames)")
        }

        @Test("channel: SRT listener with a passphrase; garbage, a wrong or no passphrase and audio only are refused by name; a killed publisher's successor takes over at once, a second publisher waits its turn",
              .timeLimit(.minutes(3)))
        func srtListener() async throws {
            let sandbox = try Sandbox("channel-srt")
            defer { sandbox.remove() }
            let port = try Self.freePort()
            let passphrase = "correct-horse-battery"
            let url = "srt://127.0.0.1:\(port)?passphrase=\(passphrase)"
            let output = sandbox.file("out/index.m3u8")
            let reportFile = sandbox.file("report.json")
            let channel = try await Self.startChannel(["run", "srt://127.0.0.1:\(port)?mode=listener&passphrase=\(passphrase)", "-o", output.path,
                                                "--hls-time", "1", "--hls-playlist", "event", "--on-input-loss", "hold",
                                                "--input-loss-after", "0.5", "--report", reportFile.path, "-y"])
            defer { channel.send(SIGKILL) }
            try await Task.sleep(for: .seconds(1))
            // Garbage datagrams on the SRT port: random bytes, and some shaped like SRT control
            // packets (first bit set: a handshake, a keep-alive, a shutdown) for no connection.
            let garbage = try Subprocess(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", """
                import os, socket, struct
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                for i in range(300):
                    if i % 3 == 0:
                        head = struct.pack(">HHIII", 0x8000, (0, 1, 5)[i % 9 // 3], 0, i, 0)
                        s.sendto(head + os.urandom(48), ("127.0.0.1", \(port)))
                    else:
                        s.sendto(os.urandom(1 + i * 7 % 1400), ("127.0.0.1", \(port)))
                """])
            let sent = await garbage.wait(timeout: .seconds(10))
            #expect(sent.succeeded, "\(sent.summary)")
            try await Task.sleep(for: .seconds(0.5))
            #expect(channel.isRunning, "the channel exited on garbage datagrams")
            for refusedURL in ["srt://127.0.0.1:\(port)?passphrase=not-the-right-one", "srt://127.0.0.1:\(port)"] {
                let wrong = try Self.publisher(refusedURL, seconds: 2, format: "mpegts")
                let refused = await wrong.wait(timeout: .seconds(20))
                #expect(!refused.succeeded, "\(refusedURL) published: \(refused.summary)")
            }
            let audioOnly = try Self.publisher(url, seconds: 2, format: "mpegts", audioOnly: true)
            _ = await audioOnly.wait(timeout: .seconds(20))
            // Publishers in turn: the first killed (no goodbye: SRT itself would notice only after
            // its 5 s peer-idle timeout) and the next 0.3 s later; then one that quits; then two at
            // once, the second waiting until the first has finished.
            var starts: [Date] = []
            let killed = try Self.publisher(url, seconds: 4, format: "mpegts")
            try await Task.sleep(for: .seconds(2.5))
            killed.send(SIGKILL)
            _ = await killed.wait(timeout: .seconds(5))
            try await Task.sleep(for: .seconds(0.3))
            starts.append(Date())
            let next = try Self.publisher(url, seconds: 2, format: "mpegts")
            let nextResult = await next.wait(timeout: .seconds(20))
            #expect(nextResult.succeeded, "the publisher after the killed one: \(nextResult.summary)")
            try await Task.sleep(for: .seconds(1.2))
            starts.append(Date())
            let first = try Self.publisher(url, seconds: 3, format: "mpegts")
            try await Task.sleep(for: .seconds(1))
            let second = try Self.publisher(url, seconds: 4, format: "mpegts")
            for (name, publisher) in [("first", first), ("second", second)] {
                let result = await publisher.wait(timeout: .seconds(20))
                #expect(result.succeeded, "the \(name) of two at once: \(result.summary)")
            }
            try await Task.sleep(for: .seconds(1))
            #expect(channel.isRunning)
            channel.send(SIGINT)
            let result = await channel.wait(timeout: .seconds(30))
            #expect(result.exitedNormally && [0, 130].contains(result.status), "\(result.summary)")
            let log = result.stderrText
            #expect(log.contains("refused by SRT: incorrect passphrase"), "wrong passphrase not named: \(log)")
            #expect(log.contains("refused by SRT: password required"), "missing passphrase not named: \(log)")
            #expect(log.contains("sends no video"), "audio only not refused: \(log)")
            #expect(log.contains("connected while another publishes"), "\(log)")
            #expect(!log.contains(passphrase) && log.contains("passphrase=***"), "the passphrase in the log: \(log)")
            #expect(!log.contains("Fatal") && !log.contains("Segmentation"), "\(log)")
            // Losses: after the killed one (short: its successor took over at once, not after SRT's
            // peer-idle timeout), after the one that quit, and at the end. None while the second
            // of the pair waited: the first kept publishing, then the second went on.
            let losses = try Self.report(reportFile).inputLosses ?? []
            // The report names the input as the logs do: without the passphrase.
            let reportText = try String(contentsOf: reportFile, encoding: .utf8)
            #expect(!reportText.contains(passphrase) && reportText.contains("passphrase=***"), "the passphrase in the report")
            let iso = ISO8601DateFormatter()
            iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let backs = zip(losses, starts).compactMap { loss, start in
                iso.date(from: loss.began).map { $0.addingTimeInterval(loss.seconds).timeIntervalSince(start) }
            }
            print("channel SRT: losses \(losses.map(\.seconds)) s; back \(backs) s after each publisher's start")
            // The waiting publisher's turn starts at its next keyframe (what it sent while it waited
            // is behind the live edge and dropped): a loss shorter than that, if any.
            #expect(losses.count == 3 || (losses.count == 4 && losses[2].seconds < 1.2), "\(losses)")
            #expect(backs.count == 2 && backs.allSatisfy { $0 > 0 && $0 < 1.5 }, "returns \(backs) s: \(log.suffix(3000))")
            let continuity = try await Continuity.measure(output)
            print("channel SRT: \(continuity)")
            #expect(continuity.videoGaps.isEmpty, "\(continuity)")
            #expect(continuity.videoPackets >= 300, "\(continuity)")
            try await Self.expectPlayable(output)
        }

        @Test("channel: an RTMP publisher that changes resolution twice mid-stream (in-band SPS) keeps one continuous output at the first size",
              .timeLimit(.minutes(2)))
        func rtmpResolutionChange() async throws {
            let sandbox = try Sandbox("channel-resize")
            defer { sandbox.remove() }
            // 320x240, then 480x270, then 320x240 again: 3 s each, one H.264 stream whose new
            // parameter sets come in band (a hardware encoder reconfigured, OBS's output rescaled).
            var parts: [URL] = []
            for (index, size) in ["320x240", "480x270"].enumerated() {
                let part = sandbox.file("part\(index).h264")
                try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=\(size):rate=30", "-t", "3", "-c:v", "libx264", "-preset", "ultrafast",
                                  "-tune", "zerolatency", "-g", "30", "-f", "h264", part.path])
                parts.append(part)
            }
            let joined = sandbox.file("joined.h264")
            try ([parts[0], parts[1], parts[0]].map { try Data(contentsOf: $0) }.reduce(Data(), +)).write(to: joined)
            let port = try Self.freePort()
            let url = "rtmp://127.0.0.1:\(port)/live/KEY"
            let output = sandbox.file("out/index.m3u8")
            let reportFile = sandbox.file("report.json")
            let channel = try await Self.startChannel(["run", url, "--listen", "-o", output.path, "--hls-time", "1", "--hls-playlist", "event",
                                                       "--chain", "mirror", "--on-input-loss", "hold", "--input-loss-after", "0.5",
                                                       "--report", reportFile.path, "-y"])
            defer { channel.send(SIGKILL) }
            let publisher = try Subprocess(Paths.ffmpeg, ["-hide_banner", "-nostdin", "-v", "error", "-re", "-f", "h264", "-framerate", "30",
                                                          "-i", joined.path, "-re", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                                                          "-shortest", "-c:v", "copy", "-c:a", "aac", "-f", "flv", url])
            let published = await publisher.wait(timeout: .seconds(30))
            #expect(published.succeeded, "\(published.summary)")
            try await Task.sleep(for: .seconds(1))
            #expect(channel.isRunning, "the channel exited on a resolution change")
            channel.send(SIGINT)
            let result = await channel.wait(timeout: .seconds(30))
            #expect(result.exitedNormally && [0, 130].contains(result.status), "\(result.summary)")
            #expect(!result.stderrText.contains("Fatal"), "\(result.stderrText)")
            // The run saw both changes: the 480x270 pictures take the RGB path (scaled to the
            // output's size) from the first change, the planes again from the second.
            let paths = try Self.report(reportFile).videoPaths ?? []
            #expect(paths.count == 3 && paths[1].path.contains("RGB"), "\(paths)")
            let continuity = try await Continuity.measure(output)
            print("channel RTMP resolution change: \(continuity)")
            #expect(continuity.videoGaps.isEmpty, "\(continuity)")
            // 9 s published; the first picture waits for the listener's probe.
            #expect(continuity.videoPackets >= 240, "\(continuity)")
            // Every picture decodes at the first connection's size: the 480x270 ones were scaled.
            let sizes = try await Subprocess.run(Paths.ffprobe, ["-v", "error", "-select_streams", "v", "-show_entries", "frame=width,height",
                                                                 "-of", "csv=p=0", output.path], timeout: .seconds(60))
            // (A frame with side data gets a trailing empty field in ffprobe's CSV: width and height only.)
            let lines = sizes.stdoutText.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).prefix(2).joined(separator: ",") }
            let counted = Dictionary(grouping: lines, by: { $0 }).mapValues(\.count)
            #expect(counted.keys.sorted() == ["320,240"] && counted["320,240"]! >= 240, "output picture sizes: \(counted)")
            try await Self.expectPlayable(output)
        }

        @Test("channel: an RTSP source pulled (GStreamer's RTSP server); the server killed and restarted is connected to again, a few attempts a second at most",
              .timeLimit(.minutes(2)))
        func rtspServerRestarted() async throws {
            let sandbox = try Sandbox("channel-rtsp")
            defer { sandbox.remove() }
            let clip = sandbox.file("clip.mp4")
            try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                              "-t", "20", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-c:a", "aac", clip.path])
            let port = try Self.freePort()
            // Debian's gi is in /usr/bin/python3's path only (scripts/install-deps.sh installs it).
            func server() async throws -> Subprocess {
                let process = try Subprocess(URL(fileURLWithPath: "/usr/bin/python3"),
                                             [Paths.packageRoot.appendingPathComponent("scripts/rtsp-server.py").path, String(port), "live", clip.path],
                                             streamingStderr: true)
                _ = try await process.firstStderrLine("'rtsp-server: ready'", within: .seconds(20)) { $0.contains("rtsp-server: ready") }
                return process
            }
            var origin = try await server()
            defer { origin.send(SIGKILL) }
            let output = sandbox.file("out/index.m3u8")
            let reportFile = sandbox.file("report.json")
            let channel = try LiveFilter.start(["run", "rtsp://127.0.0.1:\(port)/live", "-o", output.path, "--hls-time", "1", "--hls-playlist", "event",
                                                "--on-input-loss", "hold", "--input-loss-after", "0.5", "--report", reportFile.path, "-y"])
            defer { channel.send(SIGKILL) }
            try await Task.sleep(for: .seconds(4))
            // The server goes away for 3 s (a camera rebooting): the channel holds its picture and
            // tries again — not thousands of times a second.
            origin.send(SIGKILL)
            _ = await origin.wait(timeout: .seconds(10))
            try await Task.sleep(for: .seconds(0.5))
            let before = try Self.cpuSeconds(of: channel)
            try await Task.sleep(for: .seconds(2.5))
            let spent = try Self.cpuSeconds(of: channel) - before
            #expect(spent < 0.5, "the channel spent \(spent) s of CPU in 2.5 s waiting for its server")
            #expect(channel.isRunning, "the channel exited when its RTSP server went away")
            origin = try await server()
            try await Task.sleep(for: .seconds(5))
            channel.send(SIGINT)
            let result = await channel.wait(timeout: .seconds(30))
            #expect(result.exitedNormally && [0, 130].contains(result.status), "\(result.summary)")
            let log = result.stderrText
            #expect(log.contains("cannot connect") && log.contains("connected again"), "\(log)")
            let attempts = log.components(separatedBy: "cannot connect").count - 1
            #expect(attempts <= 2, "one warning per outage (and one per 30 attempts): \(attempts)")
            let report = try Self.report(reportFile)
            let losses = report.inputLosses ?? []
            #expect(losses.count == 1 && losses[0].seconds > 2.5 && losses[0].seconds < 8, "\(losses)")
            let continuity = try await Continuity.measure(output)
            print("channel RTSP server restarted: \(continuity); losses \(losses.map(\.seconds))")
            #expect(continuity.videoGaps.isEmpty && continuity.audioGaps.isEmpty, "\(continuity)")
            // 4 s, the hold, 5 s again: about 12 s of output, all of it at 30 fps.
            #expect(continuity.videoEnd > 10 && continuity.videoPackets >= 300, "\(continuity)")
            try await Self.expectPlayable(output)
        }

        /// User + system CPU seconds of a running child (/proc/PID/stat, clock ticks of 1/100 s).
        static func cpuSeconds(of process: Subprocess) throws -> Double {
            let stat = try String(contentsOfFile: "/proc/\(process.pid)/stat", encoding: .utf8)
            // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
            let fields = stat[stat.range(of: ")")!.upperBound...].split(separator: " ")
            return (Double(fields[11])! + Double(fields[12])!) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }

        @Test("channel: MPEG-TS over UDP; a sender that stops and starts again (its clock from 0) continues one timeline")
        func udpSenderComesBack() async throws {
            let sandbox = try Sandbox("channel-udp")
            defer { sandbox.remove() }
            let port = try Self.freePort()
            let output = sandbox.file("out/index.m3u8")
            let channel = try await Self.startChannel(["run", "udp://127.0.0.1:\(port)", "-o", output.path, "--hls-time", "1", "--hls-playlist", "event",
                                                "--on-input-loss", "hold", "--input-loss-after", "0.5", "--io-timeout", "1", "-y"])
            defer { channel.send(SIGKILL) }
            try await Task.sleep(for: .seconds(1))
            for _ in 0..<3 {
                let sender = try Self.publisher("udp://127.0.0.1:\(port)?pkt_size=1316", seconds: 2.5, format: "mpegts")
                _ = await sender.wait(timeout: .seconds(20))
                try await Task.sleep(for: .seconds(2))
                #expect(channel.isRunning)
            }
            channel.send(SIGINT)
            let result = await channel.wait(timeout: .seconds(30))
            #expect(result.exitedNormally && [0, 130].contains(result.status), "\(result.summary)")
            let continuity = try await Continuity.measure(output)
            print("channel UDP ×3: \(continuity)")
            #expect(continuity.videoGaps.isEmpty, "\(continuity)")
            #expect(continuity.videoPackets >= 150, "\(continuity)")
            try await Self.expectPlayable(output)
        }

        @Test("channel: with --on-input-loss end, a publisher that leaves ends the run with a finished output (exit 0)")
        func rtmpEndPolicy() async throws {
            let sandbox = try Sandbox("channel-end")
            defer { sandbox.remove() }
            let port = try Self.freePort()
            let url = "rtmp://127.0.0.1:\(port)/live/KEY"
            let output = sandbox.file("out.mp4")
            let channel = try await Self.startChannel(["run", url, "--listen", "-o", output.path, "-y", "-q"])
            defer { channel.send(SIGKILL) }
            try await Task.sleep(for: .seconds(1))
            let publisher = try Self.publisher(url, seconds: 2)
            _ = await publisher.wait(timeout: .seconds(20))
            let result = await channel.wait(timeout: .seconds(30))
            #expect(result.succeeded, "\(result.summary)")
            let frames = try await FFprobe.probe(output, countFrames: true).video?.readFrames ?? 0
            #expect(frames >= 50, "\(frames) pictures")
        }

        @Test("channel: a listener off loopback needs a stream key or passphrase unless --listen-unauthenticated; file inputs refuse hold")
        func listenerAuthentication() async throws {
            let sandbox = try Sandbox("channel-auth")
            defer { sandbox.remove() }
            let output = sandbox.file("out.mp4").path
            for input in ["rtmp://0.0.0.0:19999/live", "srt://0.0.0.0:19998?mode=listener", "udp://0.0.0.0:19997"] {
                let result = try await LiveFilter.run(["run", input, "--listen", "-o", output, "-q"], timeout: .seconds(30))
                #expect(!result.succeeded && result.stderrText.contains("--listen-unauthenticated"), "\(input): \(result.summary)")
                #expect(result.stderrLines.filter { $0.hasPrefix("livefilter: error:") }.count == 1, "\(result.summary)")
            }
            let file = try await LiveFilter.run(["run", Paths.sample("landscape.mp4").path, "-o", output, "--on-input-loss", "hold", "-q"])
            #expect(!file.succeeded && file.stderrText.contains("live inputs"), "\(file.summary)")
        }
    }
}
