import Broadcast
import Filters
import Foundation
import MediaIO
import Testing

/// `A53CaptionSEI` against FFmpeg's H.264 decoder, the oracle: libx264 writes each picture's caption
/// bytes as SEI (Annex B in MPEG-TS, length-prefixed in MP4), and for every packet our reading of
/// its SEI must equal what the decoder attaches to that picture (`AV_FRAME_DATA_A53_CC`).
@Suite("A/53 caption SEI against FFmpeg's decoder")
struct A53CaptionSEIOracleTests {
    @Test("each packet's caption data read from its SEI is what FFmpeg's decoder attaches to its picture", arguments: [OutputContainer.ts, .mp4])
    func matchesDecoder(container: OutputContainer) throws {
        FFmpegLog.setLevel(.error)
        let size = FrameSize(64, 48)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("livefilter-sei-\(UUID().uuidString).\(container == .ts ? "ts" : "mp4")").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var settings = VideoEncoderSettings()
        settings.speedPreset = .veryfast  // B-pictures: packets in decode order, pictures reordered
        let encoder = try Encoder.h264(size: size, frameRate: Rational(30, 1), timeBase: Rational(1, 30), color: .bt709,
                                       settings: settings, globalHeader: container == .mp4)
        let muxer = try Muxer(path: path, container: container, overwrite: false)
        let index = try muxer.addStream(from: encoder)
        try muxer.begin()
        let converter = try RGBToFrame(size: size, color: .bt709)
        func drain() throws {
            while case let .packet(packet) = try encoder.receive() {
                if packet.duration == 0 { packet.duration = 1 }
                try muxer.write(packet, toStream: index, timeBase: encoder.timeBase)
            }
        }
        // Pictures with none, one or many triplets; zero bytes that need emulation prevention.
        var sent: [[UInt8]] = []
        for i in 0..<60 {
            var bytes: [UInt8] = []
            if i % 7 != 3 {
                bytes += [0xFC, UInt8(truncatingIfNeeded: 0x80 | i), 0x80, 0xFD, 0x00, 0x00]
                for k in 0..<(i % 5) { bytes += [k == 0 ? 0xFF : 0xFE, 0x00, UInt8(k)] }
            }
            sent.append(bytes)
            let frame = try converter.convert(RGBImage(size: size))
            frame.presentationTimestamp = Int64(i)
            frame.setCaptionData(bytes)
            try encoder.send(frame)
            try drain()
        }
        try encoder.sendEndOfStream()
        try drain()
        try muxer.commit()

        let demuxer = try Demuxer(url: path)
        let decoder = try Decoder(demuxer: demuxer, streamIndex: demuxer.video.index)
        var parsed: [Int64: [UInt8]] = [:]
        var decoded: [Int64: [UInt8]] = [:]
        let packet = Packet()
        func receive() throws {
            while case let .frame(frame) = try decoder.receive() { decoded[frame.timestamp ?? -1] = frame.captionData }
        }
        while case .packet = try demuxer.read(into: packet) {
            guard packet.streamIndex == demuxer.video.index else { continue }
            parsed[packet.presentationTimestamp ?? -1] = packet.h264CaptionData(lengthSize: decoder.h264LengthSize)
            try decoder.send(packet)
            try receive()
        }
        decoder.sendEndOfStream()
        try receive()
        #expect(decoded.count == 60 && parsed.count == 60)
        #expect(decoded.values.filter { !$0.isEmpty }.count == sent.filter { !$0.isEmpty }.count)
        for (pts, bytes) in decoded { #expect(parsed[pts] == bytes, "pts \(pts)") }
        // And both are what was sent, picture for picture, in presentation order.
        #expect(decoded.keys.sorted().map { decoded[$0]! } == sent)
    }
}
