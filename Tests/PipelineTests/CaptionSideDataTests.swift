import Foundation
import MediaIO
import Filters
import Testing

/// A/53 caption data on frames (issue 46, point 1): bytes written here from CEA-608's rules ride on
/// the frames libx264 encodes and are read back by FFmpeg's own caption decoder (`movie=…[out0+subcc]`,
/// then `ccaption`): the independent oracle for what reaches a viewer.
@Suite("A/53 caption data on frames")
struct CaptionSideDataTests {
    /// A CEA-608 byte with odd parity (bit 7 set when the low seven have an even number of ones).
    static func odd(_ byte: UInt8) -> UInt8 { byte.nonzeroBitCount % 2 == 0 ? byte | 0x80 : byte }

    /// A pop-on caption on CC1 (field 1), control codes sent twice as 608 asks: resume caption
    /// loading, erase non-displayed memory, a preamble for row 15, the text, end of caption.
    static func popOn(_ text: String) -> [(UInt8, UInt8)] {
        var pairs: [(UInt8, UInt8)] = []
        func control(_ a: UInt8, _ b: UInt8) { pairs += [(odd(a), odd(b)), (odd(a), odd(b))] }
        control(0x14, 0x20)  // RCL
        control(0x14, 0x2E)  // ENM
        control(0x14, 0x70)  // PAC: row 15, white
        let chars = Array(text.utf8)
        for i in stride(from: 0, to: chars.count, by: 2) {
            pairs.append((odd(chars[i]), i + 1 < chars.count ? odd(chars[i + 1]) : 0x80))
        }
        control(0x14, 0x2F)  // EOC: the caption shows
        return pairs
    }

    @Test("caption bytes on frames are written by libx264 and read back by FFmpeg's caption decoder; a frame's bytes can be replaced or removed")
    func roundTrip() async throws {
        FFmpegLog.setLevel(.error)
        let size = FrameSize(64, 48)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("livefilter-cc-\(UUID().uuidString).ts").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var settings = VideoEncoderSettings()
        settings.speedPreset = .ultrafast
        let encoder = try Encoder.h264(size: size, frameRate: Rational(30, 1), timeBase: Rational(1, 30), color: .bt709,
                                       settings: settings, globalHeader: false)
        let muxer = try Muxer(path: path, container: .ts, overwrite: false)
        let index = try muxer.addStream(from: encoder)
        try muxer.begin()
        let converter = try RGBToFrame(size: size, color: .bt709)
        func drain() throws {
            while case let .packet(packet) = try encoder.receive() { try muxer.write(packet, toStream: index, timeBase: encoder.timeBase) }
        }
        // Two captions a second apart; padding between, as an inserter sends.
        var pictures = Array(repeating: [UInt8]([0xFC, 0x80, 0x80]), count: 90)
        for (start, text) in [(0, "HELLO"), (45, "WORLD")] {
            for (i, pair) in Self.popOn(text).enumerated() { pictures[start + i] = [0xFC, pair.0, pair.1] }
        }
        for (i, bytes) in pictures.enumerated() {
            let frame = try converter.convert(RGBImage(size: size))
            frame.presentationTimestamp = Int64(i)
            frame.setCaptionData([0xFC, 0x41, 0x41])
            frame.setCaptionData(bytes)  // replaced, not added to
            #expect(frame.captionData == bytes)
            if i == 89 { frame.setCaptionData([]); #expect(frame.captionData.isEmpty) }
            try encoder.send(frame)
            try drain()
        }
        try encoder.sendEndOfStream()
        try drain()
        try muxer.commit()

        let srt = Process()
        srt.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        srt.arguments = ["-hide_banner", "-v", "error", "-f", "lavfi", "-i", "movie=\(path)[out0+subcc]", "-map", "0:s", "-f", "srt", "-"]
        let out = Pipe()
        srt.standardOutput = out
        try srt.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        srt.waitUntilExit()
        print("ffmpeg's caption decoder:\n\(text)")
        #expect(srt.terminationStatus == 0)
        #expect(text.contains("HELLO") && text.contains("WORLD"), "\(text)")
        // Each caption shows on the picture that carries its end-of-caption (the 10th pair: pictures 9 and 54).
        let times = text.split(separator: "\n").filter { $0.contains("-->") }.map { String($0.prefix(12)) }
        #expect(times == ["00:00:00,300", "00:00:01,800"], "\(times)")
    }
}
