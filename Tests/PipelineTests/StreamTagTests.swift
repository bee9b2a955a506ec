import CFFmpeg
import Filters
import Foundation
import MediaIO
import Testing

/// The typed colour tags and pixel formats of MediaIO's public API: the output-tag rule, and the
/// mapping to and from FFmpeg's values (checked against FFmpeg's tables, and through a real encode).
struct StreamTagTests {
    static let untagged = ColorDescription()
    static let hdr10 = ColorDescription(matrix: .bt2020nc, primaries: .bt2020, transfer: .smpte2084, range: .limited)
    static let pal = ColorDescription(matrix: .bt470bg, primaries: .bt470bg, transfer: .gamma28, range: .limited)

    // MARK: The output tags

    @Test("outputTags: the source's tags where stated, else BT.709 for HD and SMPTE 170M for SD, always limited",
          arguments: [
              (untagged, FrameSize(1920, 1080), ColorDescription.bt709),
              (untagged, FrameSize(1280, 720), .bt709),
              (untagged, FrameSize(1280, 360), .bt709),   // wide enough
              (untagged, FrameSize(640, 720), .bt709),    // tall enough
              (untagged, FrameSize(1279, 719), .smpte170m),
              (untagged, FrameSize(640, 360), .smpte170m),
              (ColorDescription(matrix: .bt709, primaries: .bt709, transfer: .bt709, range: .full), FrameSize(640, 360), .bt709),
              (hdr10, FrameSize(3840, 2160), hdr10),
              (hdr10, FrameSize(640, 360), hdr10),
              (pal, FrameSize(1920, 1080), pal),
              // An RGB (identity) matrix does not describe the Y′CbCr output: it counts as unstated.
              (ColorDescription(matrix: .rgb, primaries: .bt709, transfer: .iec61966_2_1, range: .full), FrameSize(640, 480),
               ColorDescription(matrix: .smpte170m, primaries: .bt709, transfer: .iec61966_2_1, range: .limited)),
              // Each tag on its own: the stated ones stay, the others are guessed.
              (ColorDescription(matrix: .unspecified, primaries: .bt2020, transfer: .aribStdB67, range: .limited), FrameSize(1920, 1080),
               ColorDescription(matrix: .bt709, primaries: .bt2020, transfer: .aribStdB67, range: .limited)),
              (ColorDescription(matrix: .bt470bg, primaries: .unspecified, transfer: .unspecified, range: .full), FrameSize(720, 576),
               ColorDescription(matrix: .bt470bg, primaries: .smpte170m, transfer: .smpte170m, range: .limited)),
          ])
    func outputTags(source: ColorDescription, size: FrameSize, expected: ColorDescription) {
        #expect(ColorDescription.outputTags(forSource: source, size: size) == expected)
    }

    /// Every combination of tags on an SD and an HD size: nothing is left unstated, what the source
    /// states survives, and the range is limited.
    @Test("outputTags laws over every combination of tags")
    func outputTagsLaws() {
        for size in [FrameSize(640, 360), FrameSize(1920, 1080)] {
            for matrix in ColorMatrix.allCases {
                for primaries in ColorPrimaries.allCases {
                    for transfer in TransferCharacteristic.allCases {
                        for range in ColorRange.allCases {
                            let source = ColorDescription(matrix: matrix, primaries: primaries, transfer: transfer, range: range)
                            let out = ColorDescription.outputTags(forSource: source, size: size)
                            #expect(out.range == .limited)
                            #expect(out.matrix != .unspecified && out.matrix != .rgb)
                            #expect(out.primaries != .unspecified && out.transfer != .unspecified)
                            if matrix != .unspecified && matrix != .rgb { #expect(out.matrix == matrix) }
                            if primaries != .unspecified { #expect(out.primaries == primaries) }
                            if transfer != .unspecified { #expect(out.transfer == transfer) }
                        }
                    }
                }
            }
        }
    }

    // MARK: The FFmpeg mapping

    /// A tag's raw value is FFmpeg's name for its code, and MediaIO maps through FFmpeg's name
    /// tables: so every case must have a code whose name is its raw value, and every code FFmpeg
    /// names (but those in `unmapped`) must have a case, or a stream's tag would be lost.
    static func checkAgainstFFmpeg<Tag: RawRepresentable<String> & CaseIterable>(
        _ tag: Tag.Type, codes: Range<UInt32>, unmapped: Set<String> = ["reserved"],
        name: (UInt32) -> UnsafePointer<CChar>?, code: (UnsafePointer<CChar>?) -> Int32
    ) {
        for value in Tag.allCases {
            let c = code(value.rawValue)
            #expect(c >= 0 && name(UInt32(c)).map { String(cString: $0) } == value.rawValue, "\(value) has no code of its own")
        }
        for c in codes {
            guard let n = name(c).map({ String(cString: $0) }), !unmapped.contains(n) else { continue }
            #expect(Tag(rawValue: n) != nil, "FFmpeg's \(Tag.self) \(n) has no case")
        }
    }

    @Test("every colour tag has an FFmpeg code and every FFmpeg code a tag")
    func colorTagsMatchFFmpeg() {
        Self.checkAgainstFFmpeg(ColorMatrix.self, codes: 0..<AVCOL_SPC_NB.rawValue,
                                name: { av_color_space_name(AVColorSpace(rawValue: $0)) }, code: av_color_space_from_name)
        Self.checkAgainstFFmpeg(ColorPrimaries.self, codes: 0..<AVCOL_PRI_NB.rawValue,
                                name: { av_color_primaries_name(AVColorPrimaries(rawValue: $0)) }, code: av_color_primaries_from_name)
        Self.checkAgainstFFmpeg(TransferCharacteristic.self, codes: 0..<AVCOL_TRC_NB.rawValue,
                                name: { av_color_transfer_name(AVColorTransferCharacteristic(rawValue: $0)) },
                                code: av_color_transfer_from_name)
        // An unstated range reads as limited.
        Self.checkAgainstFFmpeg(ColorRange.self, codes: 0..<AVCOL_RANGE_NB.rawValue, unmapped: ["unknown"],
                                name: { av_color_range_name(AVColorRange(rawValue: $0)) }, code: av_color_range_from_name)
        // The H.273 names where they differ from the case names.
        #expect(ColorMatrix.rgb.rawValue == "gbr" && TransferCharacteristic.aribStdB67.rawValue == "arib-std-b67")
        #expect(ColorRange.limited.rawValue == "tv" && ColorRange.full.rawValue == "pc")
    }

    static let pixelFormats: [(PixelFormat, String, bitDepth: Int)] = [
        (.yuv420p, "yuv420p", 8), (.yuvj420p, "yuvj420p", 8), (.yuv422p, "yuv422p", 8), (.yuvj422p, "yuvj422p", 8),
        (.yuv444p, "yuv444p", 8), (.yuvj444p, "yuvj444p", 8), (.yuva420p, "yuva420p", 8), (.nv12, "nv12", 8),
        (.nv21, "nv21", 8), (.yuv420p10le, "yuv420p10le", 10), (.yuv422p10le, "yuv422p10le", 10),
        (.yuv444p10le, "yuv444p10le", 10), (.p010le, "p010le", 10), (.rgb24, "rgb24", 8), (.bgr24, "bgr24", 8),
        (.rgba, "rgba", 8), (.bgra, "bgra", 8), (.gbrp, "gbrp", 8), (.gray, "gray", 8), (.pal8, "pal8", 8),
    ]

    @Test("pixel formats: FFmpeg's name, the named case back from it, bit depth", arguments: pixelFormats)
    func pixelFormatRoundTrip(format: PixelFormat, name: String, bitDepth: Int) throws {
        #expect(format.name == name)
        let parsed = try #require(PixelFormat(name: name))
        if case .other = parsed { Issue.record("\(name) parsed as .other, not its case") }
        #expect(parsed == format)
        #expect(format.bitDepth == bitDepth)
        #expect(format.isFullRangeByDefault == name.hasPrefix("yuvj"))
    }

    @Test("pixel formats without a case keep FFmpeg's name")
    func otherPixelFormats() throws {
        let yuv440 = try #require(PixelFormat(name: "yuv440p"))
        #expect(yuv440 == .other("yuv440p") && yuv440.name == "yuv440p" && yuv440.bitDepth == 8)
        #expect(PixelFormat(name: "no-such-format") == nil)
        #expect(PixelFormat.unknown.name == "unknown" && PixelFormat.unknown.bitDepth == nil)
        // Equal by name, whichever way the value was made.
        #expect(PixelFormat.other("yuv420p") == .yuv420p)
        #expect(Set([PixelFormat.other("nv12"), .nv12]).count == 1)
    }

    // MARK: Through FFmpeg for real

    static let samples: URL = {
        var dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("Package.swift").path) { dir.deleteLastPathComponent() }
        return dir.appendingPathComponent("samples")
    }()

    @Test("a sample's tags and pixel format as the demuxer reads them (ffprobe agrees)",
          arguments: [("landscape.mp4", ColorDescription.bt709), ("odd-size.mp4", untagged)])
    func sampleTags(file: String, expected: ColorDescription) throws {
        let demuxer = try Demuxer(url: Self.samples.appendingPathComponent(file).path)
        #expect(demuxer.video.colorSpace == expected)
        #expect(demuxer.video.pixelFormat == .yuv420p)
    }

    /// The encoder writes the tags into the H.264 stream and the demuxer reads the same tags back.
    @Test("encoder tags survive an encode and a demux", arguments: [ColorDescription.bt709, .smpte170m, pal, hdr10])
    func encodeAndDemux(color: ColorDescription) throws {
        FFmpegLog.setLevel(.error)
        let size = FrameSize(64, 48)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("livefilter-tags-\(UUID().uuidString).ts").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var settings = VideoEncoderSettings()
        settings.speedPreset = .ultrafast
        let encoder = try Encoder.h264(size: size, frameRate: Rational(25, 1), timeBase: Rational(1, 25), color: color,
                                       settings: settings, globalHeader: false)
        #expect(encoder.inputPixelFormat == .yuv420p)
        let muxer = try Muxer(path: path, container: .ts, overwrite: false)
        let index = try muxer.addStream(from: encoder)
        try muxer.begin()
        let converter = try RGBToFrame(size: size, color: color)
        let image = RGBImage(size: size)
        func drain() throws {
            while case let .packet(packet) = try encoder.receive() {
                try muxer.write(packet, toStream: index, timeBase: encoder.timeBase)
            }
        }
        for i in 0..<5 {
            let frame = try converter.convert(image)
            frame.presentationTimestamp = Int64(i)
            try encoder.send(frame)
            try drain()
        }
        try encoder.sendEndOfStream()
        try drain()
        try muxer.commit()

        let video = try Demuxer(url: path).video
        #expect(video.colorSpace == color)
        #expect(video.pixelFormat == .yuv420p)
    }
}
