import Broadcast
import Foundation
import Testing

/// A SCTE-35 PID added to MPEG-TS the ffmpeg CLI wrote (x264 + AAC), with sections threefive
/// made (scripts/scte35-oracle.py); read back by ffprobe (the stream, every packet), threefive's
/// own TS reader (the sections) and a packet walk written from ISO/IEC 13818-1 (scripts/ts-oracle.py:
/// where each section landed, continuity counters, the PMTs).
@Suite("TransportStreamRewriter: SCTE-35 sections in FFmpeg's MPEG-TS, read by ffprobe and threefive", .serialized)
struct TransportStreamRewriterTests {
    struct Made: Decodable { var name: String; var hex: String }
    struct Walk: Decodable {
        struct Cue: Decodable { var hex: String; var pid: Int?; var pts_adjustment: UInt64; var splice_time: UInt64? }
        struct Placement: Decodable { var pid: Int; var next_video_pts: UInt64?; var next_video_random_access: Bool }
        struct Stream: Decodable, Equatable { var type: Int; var pid: Int; var descriptors: String }
        struct PMT: Decodable { var pcr_pid: Int; var program_descriptors: String; var streams: [Stream] }
        var cues: [Cue]
        var placements: [Placement]
        var cc_errors: [[String: Int]]
        var pmts: [PMT]
        var pmt_count: Int
        var video_pes: Int
        /// The stream_id of each non-video PID's first PES (decimal PID as the key).
        var pes_stream_ids: [String: Int]
    }
    struct Probe: Decodable {
        struct Stream: Decodable { var index: Int; var codec_name: String?; var codec_type: String; var id: String }
        struct Packet: Decodable, Equatable { var stream_index: Int; var pts: Int?; var dts: Int?; var size: String; var flags: String }
        var streams: [Stream]?
        var packets: [Packet]?
    }

    static func sections() throws -> [String: SpliceInfoSection] {
        let made = try ExternalTool.oracle("scte35-oracle.py", ["make"], as: [Made].self)
        return Dictionary(uniqueKeysWithValues: try made.map { ($0.name, try SpliceInfoSection(hex: $0.hex)) })
    }

    /// 6 s of x264 (a keyframe each second, B-frames) and AAC, as the ffmpeg CLI muxes MPEG-TS.
    static func source(in folder: URL, name: String = "in.ts", extra: [String] = []) throws -> URL {
        let url = folder.appendingPathComponent(name)
        try ExternalTool.run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30",
                                        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "6", "-c:v", "libx264",
                                        "-g", "30", "-keyint_min", "30", "-sc_threshold", "0", "-pix_fmt", "yuv420p", "-c:a", "aac"]
                                        + extra + ["-f", "mpegts", url.path])
        return url
    }

    static func probe(_ url: URL, _ what: [String]) throws -> Probe {
        try JSONDecoder().decode(Probe.self, from: ExternalTool.run("ffprobe", ["-v", "error", "-of", "json"] + what + [url.path]))
    }

    static func walk(_ url: URL) throws -> Walk { try ExternalTool.oracle("ts-oracle.py", [url.path], as: Walk.self) }

    /// Feeds `bytes` in pieces of pseudo-random sizes (1 byte to 3 packets and a bit), as an AVIO
    /// buffer's flushes would come.
    static func rewrite(_ bytes: [UInt8], with rewriter: inout TransportStreamRewriter, seed: UInt64 = 46) throws -> [UInt8] {
        var out: [UInt8] = [], offset = 0, state = seed
        while offset < bytes.count {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let size = min(bytes.count - offset, 1 + Int(state >> 33) % 600)
            out += try rewriter.rewrite(Array(bytes[offset..<offset + size]))
            offset += size
        }
        return out
    }

    @Test("sections land before the pictures they name; ffprobe sees scte_35 on the PID and every packet; threefive decodes each; counters run on")
    func sectionsInFFmpegTS() throws {
        let folder = try ExternalTool.folder("ts-scte35")
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = try Self.source(in: folder)
        let before = try Self.probe(input, ["-show_packets", "-show_entries", "packet=stream_index,pts,dts,size,flags"]).packets ?? []
        let keyframes = before.filter { $0.stream_index == 0 && $0.flags.hasPrefix("K") }.compactMap(\.pts).map(UInt64.init)
        try #require(keyframes.count == 6, "x264 at -g 30 gives a keyframe each second")
        let sections = try Self.sections()
        let null = try #require(sections["null"]), long = try #require(sections["signal-long"])
        let out = try #require(sections["insert-out"]), back = try #require(sections["insert-in"])
        #expect(long.bytes.count > 183, "the long section spans packets")

        var rewriter = TransportStreamRewriter()
        rewriter.enqueue(null, at: .nextPacket)  // waits for the first PMT that declares the PID
        rewriter.enqueue(long, at: .nextKeyframe)
        rewriter.enqueue(out, at: .videoPES(ptsAtLeast: keyframes[2]), aligningSpliceTime: true)
        rewriter.enqueue(back, at: .videoPES(ptsAtLeast: keyframes[4] - 1))
        let bytes = try Self.rewrite(Array(try Data(contentsOf: input)), with: &rewriter)
        let output = folder.appendingPathComponent("out.ts")
        try Data(bytes).write(to: output)
        #expect(rewriter.heldBytes == 0 && rewriter.queuedSections == 0 && rewriter.sectionsWritten == 4)
        #expect(rewriter.scte35PID == 0x1F4)

        let streams = try Self.probe(output, ["-show_streams"]).streams ?? []
        #expect(streams.contains { $0.codec_name == "scte_35" && $0.id == "0x1f4" }, "\(streams)")
        let after = try Self.probe(output, ["-show_packets", "-show_entries", "packet=stream_index,pts,dts,size,flags"]).packets ?? []
        #expect(after.filter { $0.stream_index < 2 } == before, "every video and audio packet as it was")
        #expect(after.filter { $0.stream_index == 2 }.count == 4, "FFmpeg's demuxer reads the four sections")

        let walk = try Self.walk(output), walked = try Self.walk(input)
        #expect(walk.cc_errors.isEmpty, "\(walk.cc_errors)")
        #expect(walk.pmt_count == walked.pmt_count && walk.pmt_count > 1, "every PMT FFmpeg sent, rewritten")
        for pmt in walk.pmts {
            #expect(pmt.streams.dropLast() == walked.pmts[0].streams[...])
            #expect(pmt.streams.last == .init(type: 0x86, pid: 0x1F4, descriptors: "8a0101"))
            #expect(pmt.program_descriptors.contains("0504" + "43554549"), "registration descriptor CUEI")
        }
        #expect(walk.pmts.count == 1, "one PMT, the same each time")
        // threefive, reading the TS on its own, finds the sections in order, the long one whole.
        let aligned = out.adjusted(by: Int64(keyframes[2]) - Int64(try #require(out.spliceTime)))
        #expect(walk.cues.map(\.hex) == [null.hex, long.hex, aligned.hex, back.hex])
        #expect(walk.cues.count == 4 && walk.cues[2].splice_time == keyframes[2], "the splice is the picture it stands before")
        #expect(walk.cues.count == 4 && walk.cues[3].splice_time == back.spliceTime, "not aligned: as made")
        let placed = walk.placements.map(\.next_video_pts)
        #expect(placed == [keyframes[0], keyframes[0], keyframes[2], keyframes[4]], "\(placed)")
        #expect(walk.placements.dropFirst().allSatisfy { $0.next_video_random_access })
        #expect(walk.video_pes == walked.video_pes)
    }

    @Test("the same bytes out however the input is cut: whole, by packet, by byte, at random", arguments: [0, 188, 1, 7777, 46, 47])
    func chunking(size: Int) throws {
        let folder = try ExternalTool.folder("ts-chunks")
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = Array(try Data(contentsOf: try Self.source(in: folder)))
        let sections = try Self.sections()
        func run(_ feed: (inout TransportStreamRewriter) throws -> [UInt8]) throws -> [UInt8] {
            var rewriter = TransportStreamRewriter()
            rewriter.enqueue(try #require(sections["signal-long"]), at: .nextKeyframe)
            rewriter.enqueue(try #require(sections["insert-out"]), at: .videoPES(ptsAtLeast: 200_000), aligningSpliceTime: true)
            return try feed(&rewriter)
        }
        let whole = try run { try $0.rewrite(input) }
        #expect(whole.count == input.count + 188 * 3)
        let pieces = try run { rewriter in
            if size > 100 || size == 1 {
                return try stride(from: 0, to: input.count, by: size).flatMap { try rewriter.rewrite(Array(input[$0..<min($0 + size, input.count)])) }
            }
            return try Self.rewrite(input, with: &rewriter, seed: UInt64(size))
        }
        #expect(pieces == whole)
    }

    @Test("HLS TS segments through one rewriter: each segment declares the PID alone, the section goes into the segment it names")
    func segments() throws {
        let folder = try ExternalTool.folder("ts-segments")
        defer { try? FileManager.default.removeItem(at: folder) }
        try ExternalTool.run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-t", "6",
                                        "-c:v", "libx264", "-g", "30", "-sc_threshold", "0", "-f", "hls", "-hls_time", "2",
                                        "-hls_playlist_type", "vod", "-hls_segment_filename", folder.appendingPathComponent("s%d.ts").path,
                                        folder.appendingPathComponent("in.m3u8").path])
        let names = (0..<3).map { "s\($0).ts" }
        let firstPTS = try names.map { name in
            try #require(try Self.probe(folder.appendingPathComponent(name), ["-show_packets", "-show_entries", "packet=stream_index,pts,dts,size,flags"])
                .packets?.compactMap(\.pts).min())
        }
        let sections = try Self.sections()
        let out = try #require(sections["insert-out"]), null = try #require(sections["null"])
        var rewriter = TransportStreamRewriter()
        rewriter.enqueue(out, at: .videoPES(ptsAtLeast: UInt64(firstPTS[1])), aligningSpliceTime: true)
        for name in names {
            let bytes = try rewriter.rewrite(Array(try Data(contentsOf: folder.appendingPathComponent(name))))
            #expect(rewriter.heldBytes == 0, "a segment ends on a packet boundary: nothing held into the next file")
            try Data(bytes).write(to: folder.appendingPathComponent("out-" + name))
            // Queued between two segments: it goes after the next segment's PAT and PMT, where a player joining there reads it.
            if name == names[0] { rewriter.enqueue(null, at: .nextPacket) }
        }
        let aligned = out.adjusted(by: Int64(firstPTS[1]) - Int64(try #require(out.spliceTime)))
        for (index, name) in names.enumerated() {
            let url = folder.appendingPathComponent("out-" + name)
            let streams = try Self.probe(url, ["-show_streams"]).streams ?? []
            #expect(streams.contains { $0.codec_name == "scte_35" && $0.id == "0x1f4" }, "\(name) alone: \(streams)")
            let walk = try Self.walk(url)
            #expect(walk.cc_errors.isEmpty)
            #expect(walk.cues.map(\.hex) == (index == 1 ? [null.hex, aligned.hex] : []), "\(name)")
            #expect(walk.cues.last?.splice_time == (index == 1 ? UInt64(firstPTS[1]) : nil))
        }
    }

    @Test("a PMT that already declares the stream: nothing added twice, later sections continue its continuity counter")
    func idempotent() throws {
        let folder = try ExternalTool.folder("ts-twice")
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = Array(try Data(contentsOf: try Self.source(in: folder)))
        let sections = try Self.sections()
        var first = TransportStreamRewriter(preferredPID: 0x300)
        first.enqueue(try #require(sections["insert-out"]), at: .nextKeyframe)
        let once = try first.rewrite(input)
        var plain = TransportStreamRewriter()
        #expect(try plain.rewrite(once) == once, "the PMT already says 0x86 and CUEI: the same bytes")
        #expect(plain.scte35PID == 0x300)
        var second = TransportStreamRewriter()
        second.enqueue(try #require(sections["insert-in"]), at: .videoPES(ptsAtLeast: 400_000))
        let twice = try second.rewrite(once)
        let output = folder.appendingPathComponent("twice.ts")
        try Data(twice).write(to: output)
        let walk = try Self.walk(output)
        #expect(walk.cc_errors.isEmpty, "\(walk.cc_errors)")
        #expect(walk.cues.map(\.pid) == [0x300, 0x300])
        #expect(walk.pmts.count == 1 && walk.pmts[0].streams.filter { $0.type == 0x86 }.count == 1)
    }

    @Test("splices either side of the 33-bit PTS wrap (26.5 hours into a live run) land on their keyframes, re-timed on the wrapped clock")
    func ptsWrap() throws {
        let folder = try ExternalTool.folder("ts-wrap")
        defer { try? FileManager.default.removeItem(at: folder) }
        // 95441 s is 2.7 s before 2^33 ticks: the keyframes at 1 s and 2 s come before the wrap, the rest after.
        let input = try Self.source(in: folder, extra: ["-output_ts_offset", "95441"])
        let modulus = Int64(1) << 33
        let keyframes = try (Self.probe(input, ["-show_packets", "-show_entries", "packet=stream_index,pts,dts,size,flags"]).packets ?? [])
            .filter { $0.stream_index == 0 && $0.flags.hasPrefix("K") }.compactMap(\.pts).map { UInt64((Int64($0) % modulus + modulus) % modulus) }
        try #require(keyframes.count == 6 && keyframes[1] > keyframes[2], "the wrap between the second and third keyframe: \(keyframes)")
        let sections = try Self.sections()
        let out = try #require(sections["insert-out"]), back = try #require(sections["insert-in"])
        var rewriter = TransportStreamRewriter()
        rewriter.enqueue(out, at: .videoPES(ptsAtLeast: keyframes[1]), aligningSpliceTime: true)
        rewriter.enqueue(back, at: .videoPES(ptsAtLeast: keyframes[3]), aligningSpliceTime: true)
        let output = folder.appendingPathComponent("out.ts")
        try Data(try Self.rewrite(Array(try Data(contentsOf: input)), with: &rewriter)).write(to: output)
        let walk = try Self.walk(output)
        #expect(walk.placements.map(\.next_video_pts) == [keyframes[1], keyframes[3]])
        #expect(walk.cues.map(\.splice_time) == [keyframes[1], keyframes[3]], "threefive: pts_time + pts_adjustment, mod 2^33")
        #expect(walk.cc_errors.isEmpty)
    }

    @Test("the preferred PID taken by a stream: the next free one")
    func pidInUse() throws {
        let folder = try ExternalTool.folder("ts-pid")
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = Array(try Data(contentsOf: try Self.source(in: folder)))
        var rewriter = TransportStreamRewriter(preferredPID: 0x100)  // FFmpeg's first stream, 0x101 its second
        let output = folder.appendingPathComponent("out.ts")
        try Data(try rewriter.rewrite(input)).write(to: output)
        #expect(rewriter.scte35PID == 0x102)
        #expect(try Self.probe(output, ["-show_streams"]).streams?.contains { $0.codec_name == "scte_35" && $0.id == "0x102" } == true)
    }

    @Test("a program with timed ID3 (FFmpeg's stream copy): the metadata_pointer_descriptor Apple asks for is added; ffprobe reads every ID3 packet as before")
    func timedID3() throws {
        let folder = try ExternalTool.folder("ts-id3")
        defer { try? FileManager.default.removeItem(at: folder) }
        let id3 = folder.appendingPathComponent("id3.ts"), muxed = folder.appendingPathComponent("muxed.ts")
        _ = try ExternalTool.run("python3", [ExternalTool.scripts.appendingPathComponent("timed-id3-oracle.py").path, "ts", id3.path])
        try ExternalTool.run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-i", try Self.source(in: folder).path, "-i", id3.path,
                                        "-map", "0:v", "-map", "1:d", "-c", "copy", "-f", "mpegts", muxed.path])
        var rewriter = TransportStreamRewriter()
        let output = folder.appendingPathComponent("out.ts")
        try Data(try rewriter.rewrite(Array(try Data(contentsOf: muxed)))).write(to: output)
        let walk = try Self.walk(output)
        #expect(walk.pmts.count == 1)
        // registration 'CUEI', then metadata_pointer_descriptor: 0xFFFF 'ID3 ', 0xFF 'ID3 ', service 0, flags 0x1F, program 1.
        #expect(walk.pmts.first?.program_descriptors == "0504" + "43554549" + "250f" + "ffff49443320" + "ff49443320" + "00" + "1f" + "0001")
        #expect(walk.cc_errors.isEmpty)
        let before = try Self.probe(muxed, ["-show_packets", "-show_entries", "packet=stream_index,pts,dts,size,flags"]).packets
        let after = try Self.probe(output, ["-show_packets", "-show_entries", "packet=stream_index,pts,dts,size,flags"]).packets
        #expect(after == before && before?.contains { $0.stream_index == 1 } == true)
        #expect(try Self.probe(output, ["-show_streams"]).streams?.map { $0.codec_name ?? "" } == ["h264", "timed_id3", "scte_35"])
    }

    @Test("bytes that are not TS, and a PMT with no room left: typed errors that say what to do")
    func errors() throws {
        var rewriter = TransportStreamRewriter()
        let pat: [UInt8] = SpliceInfoSectionTests.withCRC([0x00, 0xB0, 0x0D, 0x00, 0x01, 0xC1, 0x00, 0x00, 0x00, 0x01, 0xF0, 0x00])
        let patPacket = [0x47, 0x40, 0x00, 0x10, 0x00] + pat + [UInt8](repeating: 0xFF, count: 188 - 5 - pat.count)
        #expect(throws: TransportStreamError.lostSync(byteOffset: 188)) { try rewriter.rewrite(patPacket + [0x48] + patPacket.dropFirst()) }

        // A PMT of 32 AAC streams: 12 + 32 × 5 + 4 = 176 bytes; with ours (5 + 3) and CUEI (6) it is 190.
        var body: [UInt8] = [0x00, 0x01, 0xC1, 0x00, 0x00, 0xE1, 0x00, 0xF0, 0x00]
        for pid in 0x100..<0x120 { body += [0x0F, 0xE0 | UInt8(pid >> 8), UInt8(pid & 0xFF), 0xF0, 0x00] }
        let pmt = SpliceInfoSectionTests.withCRC([0x02, 0xB0, UInt8(body.count + 4)] + body)
        let pmtPacket = [0x47, 0x50, 0x00, 0x10, 0x00] + pmt + [UInt8](repeating: 0xFF, count: 188 - 5 - pmt.count)
        var full = TransportStreamRewriter()
        #expect(throws: TransportStreamError.pmtOverflow(sectionBytes: 190, room: 183)) { try full.rewrite(patPacket + pmtPacket) }
        #expect(TransportStreamError.pmtOverflow(sectionBytes: 190, room: 183).description.contains("fewer streams"))

        var damaged = TransportStreamRewriter()
        var badCRC = pmtPacket
        badCRC[5 + pmt.count - 1] ^= 1
        #expect(throws: TransportStreamError.malformedTable("PMT: CRC_32 does not match")) { try damaged.rewrite(patPacket + badCRC) }
    }
}
