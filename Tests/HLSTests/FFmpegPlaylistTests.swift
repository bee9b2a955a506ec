import Foundation
import HLS
import Testing

/// Playlists the ffmpeg CLI writes (its hls muxer: keys, single-file byte ranges, fMP4), read by our
/// parser, linted, and checked against the media itself: a key and IV that decrypt a segment to MPEG-TS
/// (openssl is the oracle), byte ranges that tile the file.
@Suite(.serialized)
struct FFmpegPlaylistTests {
    /// 4 s of a 10 fps test pattern, a keyframe every second, cut into 1 s segments.
    static func ffmpeg(_ folder: ScratchFolder, _ name: String, _ options: [String]) throws -> (text: String, path: String) {
        let path = folder.path + "/" + name
        let r = try Tools.run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=s=160x90:r=10", "-t", "4",
                                         "-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-hls_time", "1",
                                         "-hls_playlist_type", "vod"] + options + [path])
        guard r.status == 0 else { throw ToolError.failed("ffmpeg: \(r.stderr)") }
        return (try String(contentsOfFile: path, encoding: .utf8), path)
    }

    enum ToolError: Error { case failed(String) }

    static let key = Array("0123456789abcdef".utf8)
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// Whether `segment` decrypted with AES-128-CBC starts with an intact MPEG-TS packet: sync byte
    /// 0x47 and a first PSI section (ffmpeg's SDT or PAT) whose CRC-32 holds. A wrong IV changes the
    /// first 16 bytes only, which that section covers.
    static func decryptsToTS(_ segment: String, iv: InitializationVector) throws -> Bool {
        let r = try Tools.run("openssl", ["aes-128-cbc", "-d", "-K", hex(key), "-iv", hex(iv.bytes), "-in", segment, "-out", segment + ".clear"])
        guard r.status == 0, let clear = FileManager.default.contents(atPath: segment + ".clear").map(Array.init),
              clear.count >= 188, clear[0] == 0x47, clear[1] & 0x40 != 0 else { return false }
        // Payload unit start: pointer field at 4 (0 here), then the section; its length is in bytes 6–7.
        let end = 5 + 3 + (Int(clear[6] & 0x0F) << 8 | Int(clear[7]))
        return clear[4] == 0 && end <= 188 && mpegCRC32(clear[5..<end]) == 0
    }

    /// CRC-32/MPEG-2 (ISO 13818-1 Annex A): 0 over a whole section, its CRC included.
    static func mpegCRC32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        }
        return crc
    }

    @Test(arguments: [true, false])
    func encryptedSegmentsKnowTheirKeyAndIV(withIV: Bool) throws {
        let folder = try ScratchFolder("ffmpeg-key")
        defer { folder.remove() }
        _ = FileManager.default.createFile(atPath: folder.path + "/key.bin", contents: Data(Self.key))
        // key info file: the key's URI in the playlist, the key file, and (optionally) the IV.
        let info = "https://keys.example.com/k?id=1\n\(folder.path)/key.bin\n" + (withIV ? "0123456789abcdef0123456789abcdef\n" : "")
        try info.write(toFile: folder.path + "/key.info", atomically: true, encoding: .utf8)
        let (text, _) = try Self.ffmpeg(folder, "enc.m3u8", ["-hls_key_info_file", folder.path + "/key.info"])
        let playlist = try parseMedia(text)
        #expect(playlist.segments.count == 4)
        // Without an IV in the key info file ffmpeg still writes one: the first segment's sequence number.
        let expectedIV = withIV ? InitializationVector(hexadecimal: "0x0123456789abcdef0123456789abcdef") : InitializationVector(mediaSequenceNumber: 0)
        for (i, segment) in playlist.segments.enumerated() {
            let key = try #require(segment.key, "every segment after the key tag is encrypted")
            #expect(key.method == .aes128 && key.uri == "https://keys.example.com/k?id=1" && key.iv == expectedIV)
            let iv = key.initializationVector(mediaSequenceNumber: playlist.mediaSequenceNumber(ofSegmentAt: i))
            #expect(try Self.decryptsToTS(folder.path + "/" + segment.uri, iv: iv), "segment \(i) decrypts to MPEG-TS with the playlist's key and IV")
            let wrong = InitializationVector(mediaSequenceNumber: 99)
            #expect(try !Self.decryptsToTS(folder.path + "/" + segment.uri, iv: wrong), "the check sees a wrong IV")
        }
        #expect(HLSLinter(profile: .rfc8216).lint(text).violations.isEmpty)
        #expect(try parseMedia(playlist.render(durations: .exact)).withoutLines() == playlist.withoutLines())
    }

    @Test(arguments: ["mpegts", "fmp4"])
    func singleFileByteRangesTileTheFile(segmentType: String) throws {
        let folder = try ScratchFolder("ffmpeg-single-\(segmentType)")
        defer { folder.remove() }
        let (text, _) = try Self.ffmpeg(folder, "single.m3u8", ["-hls_flags", "single_file", "-hls_segment_type", segmentType])
        let playlist = try parseMedia(text)
        let file = try #require(playlist.segments.first?.uri)
        let attributes = try FileManager.default.attributesOfItem(atPath: folder.path + "/" + file)
        let size = try #require(attributes[.size] as? Int)
        // ffmpeg writes every offset: the ranges (after fMP4's init section) are back to back up to the end of the file.
        var next = playlist.map?.byteRange.map { $0.length + ($0.offset ?? 0) } ?? 0
        for segment in playlist.segments {
            #expect(segment.uri == file)
            let range = try #require(segment.resolvedByteRange)
            #expect(range == segment.byteRange && range.offset == next)
            next = range.offset! + range.length
        }
        #expect(next == size)
        if segmentType == "fmp4" { #expect(playlist.map == MediaInitializationSection(uri: file, byteRange: playlist.map?.byteRange)) }
        #expect(HLSLinter(profile: .rfc8216).lint(text).violations.isEmpty)

        // The same playlist with the offsets left out after the first: the parser finds ffmpeg's offsets.
        var first = true
        let implicit = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard line.hasPrefix("#EXT-X-BYTERANGE:") else { return String(line) }
            defer { first = false }
            return first ? String(line) : String(line.prefix { $0 != "@" })
        }.joined(separator: "\n")
        #expect(implicit.contains("#EXT-X-BYTERANGE:") && implicit != text)
        let resolved = try parseMedia(implicit)
        #expect(resolved.segments.map(\.resolvedByteRange) == playlist.segments.map(\.resolvedByteRange))
        #expect(resolved.segments.dropFirst().allSatisfy { $0.byteRange?.offset == nil }, "what was written is kept")
        #expect(resolved.render(durations: .exact).components(separatedBy: "@").count == text.components(separatedBy: "@").count
                - (playlist.segments.count - 1), "rendering keeps the offsets left out")
        #expect(HLSLinter(profile: .rfc8216).lint(implicit).violations.isEmpty)
    }

    @Test func fmp4SegmentsShareTheirInitSection() throws {
        let folder = try ScratchFolder("ffmpeg-fmp4")
        defer { folder.remove() }
        let (text, _) = try Self.ffmpeg(folder, "f.m3u8", ["-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4",
                                                             "-hls_flags", "discont_start+program_date_time"])
        let playlist = try parseMedia(text)
        #expect(playlist.map == MediaInitializationSection(uri: "init.mp4"))
        #expect(playlist.segments.count == 4)
        #expect(playlist.segments.allSatisfy { FileManager.default.fileExists(atPath: folder.path + "/" + $0.uri) })
        #expect(playlist.segments.map(\.discontinuity) == [true, false, false, false])
        #expect(playlist.segments.allSatisfy { $0.programDateTime != nil && !$0.isEncrypted })
        #expect(HLSLinter(profile: .rfc8216).lint(text).violations.isEmpty)
        #expect(try parseMedia(playlist.render(durations: .exact)).withoutLines() == playlist.withoutLines())
    }
}

struct EncryptionKeyTests {
    @Test func initializationVectors() throws {
        let iv = try #require(InitializationVector(hexadecimal: "0X1"))
        #expect(iv.bytes == Array(repeating: 0, count: 15) + [1])
        #expect(iv.description == "0x00000000000000000000000000000001")
        #expect(InitializationVector(mediaSequenceNumber: 0x0102) == InitializationVector(hexadecimal: "0x102"))
        #expect(InitializationVector(hexadecimal: "0x" + String(repeating: "f", count: 32))?.bytes == Array(repeating: 0xFF, count: 16))
        for bad in ["", "0x", "1234", "0x" + String(repeating: "0", count: 33), "0x12g4", "x12", "0x 1"] {
            #expect(InitializationVector(hexadecimal: bad) == nil, "\(bad)")
        }
    }

    /// Keys of different KEYFORMATs apply together; one of the same KEYFORMAT replaces; NONE ends them.
    @Test func keysApplyUntilReplaced() throws {
        let p = try parseMedia("""
            #EXTM3U
            #EXT-X-VERSION:5
            #EXT-X-TARGETDURATION:4
            #EXTINF:4,
            clear.ts
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://a",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1"
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="data:text/plain;base64,AAAA",KEYFORMAT="urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed",KEYFORMATVERSIONS="1/2"
            #EXTINF:4,
            a.ts
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://b",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1"
            #EXTINF:4,
            b.ts
            #EXT-X-KEY:METHOD=NONE
            #EXTINF:4,
            c.ts
            #EXT-X-KEY:METHOD=AES-128,URI="k"
            #EXTINF:4,
            d.ts

            """)
        #expect(p.segments[0].keys.isEmpty && !p.segments[0].isEncrypted)
        #expect(p.segments[1].keys.map(\.uri) == ["skd://a", "data:text/plain;base64,AAAA"])
        #expect(p.segments[1].keys[1].keyFormatVersions == [1, 2])
        #expect(p.segments[2].keys.map(\.uri) == ["data:text/plain;base64,AAAA", "skd://b"])
        #expect(p.segments[3].keys == [.methodNone] && !p.segments[3].isEncrypted)
        #expect(p.segments[4].key == EncryptionKey(method: .aes128, uri: "k"))
        #expect(try parseMedia(p.render(durations: .exact)).withoutLines() == p.withoutLines())
        #expect(p.minimumVersion(durations: .exact) == 5, "KEYFORMAT needs version 5")
    }

    @Test(arguments: ["#EXT-X-KEY:URI=\"k\"", "#EXT-X-KEY:METHOD=AES-128", "#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0xZZ",
                      "#EXT-X-KEY:METHOD=AES-128,URI=\"k\",KEYFORMATVERSIONS=\"1//2\"", "#EXT-X-KEY:METHOD=AES-128,URI=\"k"])
    func unreadableKeysThrow(_ tag: String) {
        #expect(throws: PlaylistParseError.self) { try PlaylistParser.parse("#EXTM3U\n#EXT-X-TARGETDURATION:4\n\(tag)\n#EXTINF:4,\na.ts\n") }
    }

    @Test func gapsAndBitrates() throws {
        let p = try parseMedia("""
            #EXTM3U
            #EXT-X-VERSION:4
            #EXT-X-TARGETDURATION:4
            #EXT-X-BITRATE:1500
            #EXTINF:4,
            a.ts
            #EXT-X-GAP
            #EXTINF:4,
            b.ts
            #EXTINF:4,
            #EXT-X-BYTERANGE:100@0
            c.ts
            #EXT-X-BITRATE:900
            #EXTINF:4,
            d.ts

            """)
        #expect(p.segments.map(\.gap) == [false, true, false, false])
        #expect(p.segments.map(\.bitrate) == [1500, 1500, nil, 900], "EXT-X-BITRATE applies until the next, but not to byte ranges")
        #expect(try parseMedia(p.render(durations: .exact)).withoutLines() == p.withoutLines())
    }

    @Test(arguments: ["#EXT-X-BYTERANGE:100\na.ts", "#EXT-X-BYTERANGE:x@0\na.ts"])
    func aByteRangeWithoutItsOffsetOrMalformedThrows(_ lines: String) {
        #expect(throws: PlaylistParseError.self) { try PlaylistParser.parse("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\n\(lines)\n") }
        // After a whole segment of another resource, too.
        #expect(throws: PlaylistParseError.self) {
            try PlaylistParser.parse("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\nb.ts\n#EXTINF:4,\n\(lines)\n")
        }
    }
}
