import Broadcast
import Foundation
import Testing

/// `emsg` boxes against the `emsg` package (PyPI: an independent builder of the same box from the
/// same fields), put into fragmented MP4 the ffmpeg CLI wrote; pymp4 (PyPI) reads the boxes back and
/// ffprobe still decodes every picture.
@Suite("EventMessageBox: emsg v1 against an independent builder, in ffmpeg's fMP4", .serialized)
struct EventMessageBoxTests {
    struct Spec: Encodable {
        var scheme: String, value: String, timescale: UInt32, presentation_time: UInt64, event_duration: UInt32, id: UInt32, message: String
        init(_ box: EventMessageBox) {
            (scheme, value, timescale, presentation_time) = (box.schemeIDURI, box.value, box.timescale, box.presentationTime)
            (event_duration, id, message) = (box.eventDuration ?? 0xFFFF_FFFF, box.id, Self.hex(box.messageData))
        }
        static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    }
    struct Box: Decodable { var type: String; var offset: Int; var size: Int; var hex: String?; var referenced_sizes: [Int]? }
    struct Tag: Decodable { var name: String; var hex: String }

    static func bytes(_ hex: String) -> [UInt8] {
        var digits = Substring(hex.hasPrefix("0x") ? String(hex.dropFirst(2)) : hex), out: [UInt8] = []
        while !digits.isEmpty { out.append(UInt8(digits.prefix(2), radix: 16)!); digits = digits.dropFirst(2) }
        return out
    }

    /// Boxes of every kind livefilter writes: ID3 tags mutagen made, SCTE-35 sections threefive made.
    static func boxes() throws -> [EventMessageBox] {
        let tags = try ExternalTool.oracle("timed-id3-oracle.py", ["tags"], as: [Tag].self)
        let sections = try SpliceInfoSectionTests.made().map { try SpliceInfoSection(hex: $0.hex) }
        var boxes = tags.enumerated().map { index, tag in
            EventMessageBox.id3(bytes(tag.hex), timescale: 90_000, presentationTime: 126_000 + 90_000 * UInt64(index), id: UInt32(index))
        }
        boxes += sections.enumerated().map { index, section in
            EventMessageBox.scte35(section, timescale: 1_000, presentationTime: (UInt64(1) << 33) + UInt64(index),
                                   eventDuration: index.isMultiple(of: 2) ? 30_000 : nil, id: 1000 + UInt32(index))
        }
        boxes.append(EventMessageBox(schemeIDURI: "urn:example:émission", value: "1", timescale: 48_000, presentationTime: .max,
                                     eventDuration: 0, id: .max, messageData: []))
        return boxes
    }

    @Test("the bytes the emsg package builds from the same fields: ID3, SCTE-35, 64-bit times, unknown durations, UTF-8")
    func sameAsIndependentBuilder() throws {
        let boxes = try Self.boxes()
        #expect(boxes.count >= 12)
        let json = String(decoding: try JSONEncoder().encode(boxes.map(Spec.init)), as: UTF8.self)
        let theirs = try ExternalTool.oracle("emsg-oracle.py", ["build", json], as: [String].self)
        #expect(theirs == boxes.map { Spec.hex($0.bytes) })
    }

    @Test("before the moof of ffmpeg's HLS fMP4 segments (styp, sidx, moof, mdat): pymp4 reads them there, the sidx still spans its subsegment, ffprobe decodes every picture")
    func inHLSSegments() throws {
        let folder = try ExternalTool.folder("emsg-hls")
        defer { try? FileManager.default.removeItem(at: folder) }
        try ExternalTool.run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-t", "4",
                                        "-c:v", "libx264", "-g", "30", "-sc_threshold", "0", "-f", "hls", "-hls_time", "1", "-hls_segment_type", "fmp4",
                                        "-hls_playlist_type", "vod", "-hls_fmp4_init_filename", "init.mp4",
                                        "-hls_segment_filename", folder.appendingPathComponent("s%d.m4s").path, folder.appendingPathComponent("in.m3u8").path])
        let boxes = try Self.boxes()
        var whole = Array(try Data(contentsOf: folder.appendingPathComponent("init.mp4"))), plain = whole
        for index in 0..<4 {
            let url = folder.appendingPathComponent("s\(index).m4s")
            let segment = Array(try Data(contentsOf: url))
            let before = try ExternalTool.oracle("emsg-oracle.py", ["boxes", url.path], as: [Box].self)
            let added = index == 1 ? Array(boxes.prefix(3)) : [boxes[index]]
            let out = try EventMessageBox.inserted(added, into: segment)
            let outURL = folder.appendingPathComponent("e\(index).m4s")
            try Data(out).write(to: outURL)
            let after = try ExternalTool.oracle("emsg-oracle.py", ["boxes", outURL.path], as: [Box].self)
            #expect(before.map(\.type) == ["styp", "sidx", "moof", "mdat"])
            #expect(after.map(\.type) == ["styp", "sidx"] + added.map { _ in "emsg" } + ["moof", "mdat"])
            #expect(after.compactMap(\.hex) == added.map { Spec.hex($0.bytes) })
            let addedBytes = added.map(\.bytes.count).reduce(0, +)
            #expect(after[1].referenced_sizes == before[1].referenced_sizes.map { [$0[0] + addedBytes] + $0.dropFirst() })
            // The sidx's reference now covers emsg + moof + mdat exactly.
            #expect(after[1].referenced_sizes?.first == after.dropFirst(2).map(\.size).reduce(0, +))
            whole += out
            plain += segment
        }
        let wholeURL = folder.appendingPathComponent("with-emsg.mp4"), plainURL = folder.appendingPathComponent("plain.mp4")
        try Data(whole).write(to: wholeURL)
        try Data(plain).write(to: plainURL)
        func frames(_ url: URL) throws -> String {
            String(decoding: try ExternalTool.run("ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v", "-show_entries",
                                                              "stream=nb_read_frames", "-of", "csv=p=0", url.path]), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try frames(plainURL) == "120")
        #expect(try frames(wholeURL) == "120")
        // The pictures themselves, not only their count: the same frame hashes.
        func hashes(_ url: URL) throws -> Data { try ExternalTool.run("ffmpeg", ["-v", "error", "-i", url.path, "-map", "0:v", "-f", "framemd5", "-"]) }
        #expect(try hashes(wholeURL) == hashes(plainURL))
    }

    /// 3 s of x264 in fragmented MP4 (in.mp4 in `folder`), a fragment a second, no styp and no
    /// trailer: its bytes and its top-level boxes as pymp4 reads them.
    static func fragmented(in folder: URL, movflags: String) throws -> (url: URL, file: [UInt8], layout: [Box]) {
        let url = folder.appendingPathComponent("in.mp4")
        try ExternalTool.run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-t", "3",
                                        "-c:v", "libx264", "-g", "30", "-movflags", movflags, url.path])
        return (url, Array(try Data(contentsOf: url)), try ExternalTool.oracle("emsg-oracle.py", ["boxes", url.path], as: [Box].self))
    }

    @Test("fragments without styp (movflags frag_keyframe+empty_moov+default_base_moof, as livefilter's HLS writer): each fragment's emsg right before its moof")
    func inFragments() throws {
        let folder = try ExternalTool.folder("emsg-frag")
        defer { try? FileManager.default.removeItem(at: folder) }
        let (url, file, layout) = try Self.fragmented(in: folder, movflags: "frag_keyframe+empty_moov+default_base_moof+skip_trailer")
        #expect(layout.map(\.type) == ["ftyp", "moov", "moof", "mdat", "moof", "mdat", "moof", "mdat"])
        // Each moof+mdat pair as the writer would hand one fragment over, an event in front of each.
        var out = Array(file[..<layout[2].offset])
        let boxes = try Self.boxes()
        for (number, start) in stride(from: 2, to: layout.count, by: 2).enumerated() {
            let fragment = Array(file[layout[start].offset..<layout[start + 1].offset + layout[start + 1].size])
            out += try EventMessageBox.inserted([boxes[number]], into: fragment)
        }
        let outURL = folder.appendingPathComponent("out.mp4")
        try Data(out).write(to: outURL)
        let after = try ExternalTool.oracle("emsg-oracle.py", ["boxes", outURL.path], as: [Box].self)
        #expect(after.map(\.type) == ["ftyp", "moov", "emsg", "moof", "mdat", "emsg", "moof", "mdat", "emsg", "moof", "mdat"])
        #expect(after.compactMap(\.hex) == boxes.prefix(3).map { Spec.hex($0.bytes) })
        let frames = try ExternalTool.run("ffmpeg", ["-v", "error", "-i", outURL.path, "-map", "0:v", "-f", "framemd5", "-"])
        #expect(try frames == ExternalTool.run("ffmpeg", ["-v", "error", "-i", url.path, "-map", "0:v", "-f", "framemd5", "-"]))
    }

    @Test("a fragment whose tfhd has an absolute base_data_offset (FFmpeg without default_base_moof): an error, not samples moved under their offsets")
    func absoluteOffsets() throws {
        let folder = try ExternalTool.folder("emsg-absolute")
        defer { try? FileManager.default.removeItem(at: folder) }
        let (_, file, layout) = try Self.fragmented(in: folder, movflags: "frag_keyframe+empty_moov+skip_trailer")
        let box = try Self.boxes()[0]
        #expect(throws: EventMessageBoxError.absoluteDataOffset) { try EventMessageBox.inserted([box], into: Array(file[layout[2].offset...])) }
    }

    @Test("no moof, or a box that runs past the bytes: typed errors; nothing to insert: the bytes as they were")
    func errors() throws {
        let box = EventMessageBox.id3([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 0], timescale: 1000, presentationTime: 0, id: 1)
        let ftyp: [UInt8] = [0, 0, 0, 16] + Array("ftypisom".utf8) + [0, 0, 2, 0]
        #expect(throws: EventMessageBoxError.noMovieFragment) { try EventMessageBox.inserted([box], into: ftyp) }
        #expect(throws: EventMessageBoxError.malformedBox(offset: 16)) {
            try EventMessageBox.inserted([box], into: ftyp + [0, 0, 1, 0] + Array("moof".utf8))
        }
        #expect(throws: EventMessageBoxError.malformedBox(offset: 0)) { try EventMessageBox.inserted([box], into: [0, 0, 0, 4] + Array("moof".utf8)) }
        #expect(try EventMessageBox.inserted([], into: ftyp) == ftyp)
        #expect(EventMessageBoxError.noMovieFragment.description.contains("before a fragment's moof"))
    }
}
