import Broadcast
import Foundation
import Testing

/// Timed ID3 as tools nobody here wrote make and carry it: tags mutagen (PyPI) writes, in MPEG-TS
/// written from Apple's timed-metadata spec (scripts/timed-id3-oracle.py), demuxed and muxed by
/// FFmpeg 5.1 (the ffmpeg CLI, ffprobe).
@Suite("ID3Tag: timed ID3 from mutagen, through FFmpeg 5.1's MPEG-TS demuxer and muxer", .serialized)
struct ID3TagTests {
    struct Made: Decodable { var name: String; var hex: String; var frames: [String: String] }
    struct Carried: Decodable { var name: String; var pts: UInt64; var hex: String }
    struct Probe: Decodable {
        struct Packet: Decodable { var pts: UInt64; var size: String; var data: String }
        var packets: [Packet]
    }

    static func tags() throws -> [Made] { try ExternalTool.oracle("timed-id3-oracle.py", ["tags"], as: [Made].self) }

    /// The bytes of ffprobe's `-show_data` hex dump ("00000000: 0000 0000 2c54 …  ....,T").
    static func bytes(ofDump dump: String) -> [UInt8] {
        dump.split(separator: "\n").flatMap { line -> [UInt8] in
            let hex = line.dropFirst(10).prefix(39).filter { !$0.isWhitespace }
            return stride(from: 0, to: hex.count, by: 2).map { offset in
                let start = hex.index(hex.startIndex, offsetBy: offset)
                return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
            }
        }
    }

    @Test("every frame mutagen wrote reads the same here: text frames, TXXX, PRIV, a tag longer than a TS packet")
    func readsMutagen() throws {
        let made = try Self.tags()
        #expect(made.count == 4)
        for tag in made {
            let ours = try ID3Tag(EventMessageBoxTests.bytes(tag.hex))
            #expect(ours.majorVersion == 4)
            #expect(ours.bytes == EventMessageBoxTests.bytes(tag.hex), "\(tag.name): kept as its bytes")
            var reading: [String: String] = [:]
            for frame in ours.frames {
                if let text = frame.userText { reading["TXXX:\(text.description)"] = text.value }
                else if let priv = frame.privateData { reading["PRIV:\(priv.owner)"] = priv.data.map { String(format: "%02x", $0) }.joined() }
                else if let text = frame.text { reading[frame.id] = text }
            }
            #expect(reading == tag.frames, "\(tag.name)")
        }
    }

    @Test("FFmpeg 5.1's demuxer: stream type 0x15 is codec timed_id3, pts the PES's, packets the tag less its first five bytes; init(demuxed:) restores each byte for byte")
    func throughFFmpegDemuxer() throws {
        let folder = try ExternalTool.folder("id3-demux")
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("id3.ts")
        let carried = try ExternalTool.oracle("timed-id3-oracle.py", ["ts", url.path], as: [Carried].self)
        let streams = String(decoding: try ExternalTool.run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,codec_type,codec_tag_string",
                                                                       "-of", "csv=p=0", url.path]), as: UTF8.self)
        // Each stream is listed once by itself and once in its program.
        #expect(Set(streams.split(separator: "\n")) == ["timed_id3,data,ID3 "])
        let probe = try JSONDecoder().decode(Probe.self, from: ExternalTool.run("ffprobe", ["-v", "error", "-of", "json", "-show_packets", "-show_data", url.path]))
        #expect(probe.packets.map(\.pts) == carried.map(\.pts))
        for (packet, sent) in zip(probe.packets, carried) {
            let tag = EventMessageBoxTests.bytes(sent.hex), data = Self.bytes(ofDump: packet.data)
            #expect(Int(packet.size) == data.count)
            #expect(data == Array(tag.dropFirst(5)), "\(sent.name): FFmpeg 5.1 takes 'ID3', version and revision for a metadata AU cell header")
            #expect(try ID3Tag(demuxed: data).bytes == tag, "\(sent.name)")
            #expect(try ID3Tag(demuxed: tag).bytes == tag, "\(sent.name): a whole tag as it is")
        }
    }

    @Test("FFmpeg 5.1's muxer (stream copy) declares timed_id3 as Apple says — stream type 0x15, metadata_descriptor 'ID3 ', PES stream_id 0xBD — and writes each packet as given")
    func throughFFmpegMuxer() throws {
        let folder = try ExternalTool.folder("id3-mux")
        defer { try? FileManager.default.removeItem(at: folder) }
        let id3 = folder.appendingPathComponent("id3.ts"), video = folder.appendingPathComponent("video.ts"), muxed = folder.appendingPathComponent("muxed.ts")
        _ = try ExternalTool.oracle("timed-id3-oracle.py", ["ts", id3.path], as: [Carried].self)
        try ExternalTool.run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-t", "5",
                                        "-c:v", "libx264", "-g", "30", "-f", "mpegts", video.path])
        try ExternalTool.run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-i", video.path, "-i", id3.path, "-map", "0:v", "-map", "1:d",
                                        "-c", "copy", "-f", "mpegts", muxed.path])
        let walk = try TransportStreamRewriterTests.walk(muxed)
        let declared = walk.pmts.flatMap(\.streams).filter { $0.type == 0x15 }
        // metadata_descriptor (ISO/IEC 13818-1 §2.6.60): application format 0xFFFF 'ID3 ', format 0xFF 'ID3 ', service 0, no config.
        #expect(declared.map(\.descriptors) == ["260d" + "ffff49443320" + "ff49443320" + "00" + "0f"])
        #expect(declared.map { walk.pes_stream_ids[String($0.pid)] } == [0xBD], "private_stream_1")
        #expect(walk.pmts.allSatisfy { $0.program_descriptors.isEmpty }, "no metadata_pointer_descriptor in the program info (Apple asks for one)")
        // Stream copy passes on what the demuxer gave: each tag five bytes short again.
        let probe = try JSONDecoder().decode(Probe.self, from: ExternalTool.run("ffprobe", ["-v", "error", "-of", "json", "-select_streams", "d",
                                                                                           "-show_packets", "-show_data", muxed.path]))
        let tags = try Self.tags()
        #expect(probe.packets.count == tags.count)
        for (packet, tag) in zip(probe.packets, tags) {
            #expect(Self.bytes(ofDump: packet.data) == Array(EventMessageBoxTests.bytes(tag.hex).dropFirst(10)), "\(tag.name): cut twice")
        }
    }

    @Test("damaged tags are errors, never a trap", arguments: [0, 1, 2, 3])
    func damaged(index: Int) throws {
        let tag = EventMessageBoxTests.bytes(try Self.tags()[index].hex)
        for cut in 0..<tag.count { _ = try? ID3Tag(tag.prefix(cut)) }
        for bit in 0..<min(tag.count, 64) * 8 {
            var flipped = tag
            flipped[bit / 8] ^= UInt8(0x80 >> (bit % 8))
            _ = try? ID3Tag(flipped)
            _ = try? ID3Tag(demuxed: flipped.dropFirst(5))
        }
        #expect(throws: ID3Error.notAnID3Tag) { try ID3Tag(Array("ID4".utf8) + tag.dropFirst(3)) }
        #expect(throws: ID3Error.unsupportedVersion(2)) { try ID3Tag(Array(tag.prefix(3)) + [2] + tag.dropFirst(4)) }
        #expect(throws: ID3Error.truncated) { try ID3Tag(tag.dropLast()) }
    }
}
