import Filters
import Foundation
import HLS
import MediaIO

/// Runs a tool and captures its output.
struct ToolResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

enum Tools {
    static func which(_ name: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    static func run(_ tool: String, _ arguments: [String]) throws -> ToolResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: which(tool) ?? "/usr/bin/\(tool)")
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both pipes before waiting, so a chatty tool cannot block on a full pipe.
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return ToolResult(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                          stderr: String(decoding: errData, as: UTF8.self))
    }

    /// `ffprobe -v error … -of default=nw=1:nk=1`, trimmed.
    static func probe(_ arguments: [String]) throws -> String {
        let r = try run("ffprobe", ["-v", "error"] + arguments + ["-of", "default=nw=1:nk=1"])
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A fresh folder under the system temp folder, removed by `remove()`.
struct ScratchFolder {
    let path: String
    init(_ name: String) throws {
        path = NSTemporaryDirectory() + "livefilter-hls-\(name)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    /// Removes the folder, unless HLS_TESTS_KEEP is set (to inspect what the writer made).
    func remove() {
        if ProcessInfo.processInfo.environment["HLS_TESTS_KEEP"] != nil { return }
        try? FileManager.default.removeItem(atPath: path)
    }
    func files() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() }
}

/// Synthetic media written straight into an `HLSWriter`: a moving 640×360 pattern at 30 fps through
/// libx264 (keyframes forced on segment ticks), plus AAC audio copied from an `ffmpeg -f lavfi -i sine` file.
enum SyntheticStream {
    static let size = FrameSize(width: 640, height: 360)
    static let frameRate = 30

    /// An mp4 with AAC-LC sine audio (and a tiny video track, since `Demuxer` wants video), made once.
    static func audioSource(seconds: Double) throws -> String {
        let path = NSTemporaryDirectory() + "livefilter-hls-sine-\(Int(seconds * 1000)).mp4"
        if FileManager.default.fileExists(atPath: path) { return path }
        let tmp = path + ".\(UUID().uuidString.prefix(6)).mp4"
        let r = try Tools.run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "color=c=black:s=64x64:r=30",
                                         "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                                         "-t", String(seconds + 0.5), "-c:v", "libx264", "-preset", "ultrafast",
                                         "-c:a", "aac", "-b:a", "96k", tmp])
        guard r.status == 0 else { throw MediaError.invalidSettings("ffmpeg could not make the sine source: \(r.stderr)") }
        if rename(tmp, path) != 0 { unlink(tmp) }
        return path
    }

    /// Writes `seconds` of video (and audio unless `audio` is false) into `writer`, calling `observe`
    /// after every packet. Keyframes are forced every `writer.options.segmentDuration` seconds.
    /// Without `commit`, the writer is left mid-run: the encoder is not flushed, the last segment open.
    static func write(into writer: HLSWriter, seconds: Double, audio: Bool = true, profile: H264Profile? = nil,
                      preset: EncoderSpeedPreset = .ultrafast, lowDelay: Bool = false, commit: Bool = true,
                      observe: () -> Void = {}, beforeVideoPacket: (Int64) -> Void = { _ in }, keyframes: Set<Int> = []) throws {
        FFmpegLog.setLevel(.error)
        let frames = Int(seconds * Double(frameRate))
        let keyEvery = Int((writer.options.segmentDuration * Double(frameRate)).rounded())
        var settings = VideoEncoderSettings()
        settings.speedPreset = preset
        settings.keyframeInterval = .frames(keyEvery)
        settings.fixedKeyframeCadence = true
        settings.profile = profile
        settings.lowDelay = lowDelay
        let color = ColorDescription.bt709
        let encoder = try Encoder.h264(size: size, frameRate: Rational(frameRate, 1), timeBase: Rational(1, frameRate),
                                       color: color, settings: settings, globalHeader: writer.wantsGlobalHeader)
        let videoIndex = try writer.addStream(from: encoder)

        var demuxer: Demuxer?
        var audioIndex = -1
        if audio {
            let d = try Demuxer(url: try audioSource(seconds: seconds))
            audioIndex = try writer.addStream(copying: d.audio!.index, of: d)
            demuxer = d
        }
        try writer.begin()

        let converter = try RGBToFrame(size: size, color: color)
        let image = RGBImage(size: size)
        let audioPacket = Packet()
        var audioDone = !audio
        func drain() throws {
            while case let .packet(p) = try encoder.receive() {
                beforeVideoPacket(p.presentationTimestamp ?? -1)
                try writer.write(p, toStream: videoIndex, timeBase: encoder.timeBase)
                observe()
            }
        }
        func feedAudio(until time: Double) throws {
            guard let demuxer, let info = demuxer.audio else { return }
            while !audioDone {
                guard try demuxer.read(into: audioPacket) == .packet else { audioDone = true; return }
                guard audioPacket.streamIndex == info.index, let pts = audioPacket.presentationTimestamp else { continue }
                let t = Double(pts) * info.timeBase.doubleValue
                if t >= seconds { audioDone = true; return }
                try writer.write(audioPacket, toStream: audioIndex, timeBase: info.timeBase)
                observe()
                if t >= time { return }
            }
        }
        for i in 0..<frames {
            paint(image, frame: i)
            let frame = try converter.convert(image)
            frame.presentationTimestamp = Int64(i)
            if i % keyEvery == 0 || keyframes.contains(i) { frame.requestKeyframe() }
            try encoder.send(frame)
            try drain()
            try feedAudio(until: Double(i + 1) / Double(frameRate))
        }
        guard commit else { return }
        try encoder.sendEndOfStream()
        try drain()
        try feedAudio(until: seconds)
        try writer.commit()
    }

    /// A moving gradient with a sliding bar, so every frame differs and the encoder spends bits.
    static func paint(_ image: RGBImage, frame: Int) {
        let bar = (frame * 7) % image.width
        for y in 0..<image.height {
            let row = image.baseAddress + y * image.bytesPerRow
            for x in 0..<image.width {
                let inBar = abs(x - bar) < 24
                row[x * 3] = inBar ? 255 : UInt8((x + frame * 3) & 0xFF)
                row[x * 3 + 1] = inBar ? 255 : UInt8((y * 2 + frame) & 0xFF)
                row[x * 3 + 2] = UInt8(((x ^ y) + frame * 5) & 0xFF)
            }
        }
    }
}

extension HLSWriter {
    /// A writer for `SyntheticStream`'s frame rate: its schedule cuts every `options.segmentDuration`,
    /// and parts (the plan's to decide in a run) are `options.partDuration` long.
    convenience init(playlistPath: String, options: HLSOutputOptions, overwrite: Bool,
                     clock: @escaping @Sendable () -> Date = { Date() }) throws {
        let grid = TickGrid(rate: Rational(SyntheticStream.frameRate, 1))
        let partTicks = options.partDuration.map { Int64(($0 * Double(SyntheticStream.frameRate) + 1e-6).rounded(.down)) }
        try self.init(playlistPath: playlistPath, options: options,
                      schedule: SegmentSchedule(grid: grid, seconds: options.segmentDuration), overwrite: overwrite,
                      partTicks: partTicks, clock: clock)
    }
}

extension MediaPlaylist {
    /// The playlist with every line number 0: what a model read from its own rendering is compared by.
    func withoutLines() -> MediaPlaylist {
        var copy = self
        for i in copy.segments.indices {
            copy.segments[i].line = 0
            for j in copy.segments[i].parts.indices { copy.segments[i].parts[j].line = 0 }
        }
        if let open = copy.segmentInProgress {
            copy.segmentInProgress?.parts = open.parts.map { var p = $0; p.line = 0; return p }
        }
        return copy
    }
}

enum HLSTestError: Error { case notMedia }

/// The media playlist `text` parses to.
func parseMedia(_ text: String) throws -> MediaPlaylist {
    guard case let .media(playlist) = try PlaylistParser.parse(text) else { throw HLSTestError.notMedia }
    return playlist
}

enum Loopback {
    /// A loopback TCP port, bound: listening, it takes connections (the kernel's backlog) and never
    /// answers (an origin that hangs; close the descriptor when done); not, it is closed at once and
    /// nothing listens there.
    static func port(listening: Bool) -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        if listening { listen(fd, 16) } else { close(fd) }
        return (listening ? fd : -1, Int(UInt16(bigEndian: address.sin_port)))
    }
}
