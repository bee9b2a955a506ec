import CFFmpeg
import struct Filters.FrameSize
import class Filters.RGBImage
import struct Filters.PlanarYUV420View
import struct Filters.YUVConverter
import enum Filters.YUVMatrix

/// Colour conversion between decoded frames and packed RGB, with the matrix and range of the
/// stream honoured in both directions so colours survive the round trip.
final class SwsContextBox {
    let pointer: OpaquePointer

    /// A converter between two fixed formats and sizes, using both cores.
    init(source: FrameSize, sourceFormat: AVPixelFormat, destination: FrameSize, destinationFormat: AVPixelFormat,
         flags: Int32 = SWS_BICUBIC, threads: Int = 0) throws(MediaError) {
        guard let ctx = sws_alloc_context() else { throw .invalidSettings("sws_alloc_context: out of memory") }
        let raw = UnsafeMutableRawPointer(ctx)
        av_opt_set_int(raw, "srcw", Int64(source.width), 0)
        av_opt_set_int(raw, "srch", Int64(source.height), 0)
        av_opt_set_int(raw, "src_format", Int64(sourceFormat.rawValue), 0)
        av_opt_set_int(raw, "dstw", Int64(destination.width), 0)
        av_opt_set_int(raw, "dsth", Int64(destination.height), 0)
        av_opt_set_int(raw, "dst_format", Int64(destinationFormat.rawValue), 0)
        av_opt_set_int(raw, "sws_flags", Int64(flags), 0)
        av_opt_set_int(raw, "threads", Int64(threads), 0)
        guard sws_init_context(ctx, nil, nil) >= 0 else {
            sws_freeContext(ctx)
            let from = av_get_pix_fmt_name(sourceFormat).map { String(cString: $0) } ?? "?"
            throw .invalidSettings("cannot convert \(from) \(source) to \(destination)")
        }
        pointer = ctx
    }

    deinit { sws_freeContext(pointer) }

    /// Sets the YUV matrix and ranges for this conversion.
    func setColorDetails(sourceMatrix: AVColorSpace, sourceFullRange: Bool, destinationMatrix: AVColorSpace, destinationFullRange: Bool) {
        let src = sws_getCoefficients(Self.swsMatrix(sourceMatrix))
        let dst = sws_getCoefficients(Self.swsMatrix(destinationMatrix))
        sws_setColorspaceDetails(pointer, src, sourceFullRange ? 1 : 0, dst, destinationFullRange ? 1 : 0, 0, 1 << 16, 1 << 16)
    }

    private static func swsMatrix(_ colorSpace: AVColorSpace) -> Int32 {
        switch colorSpace {
        case AVCOL_SPC_BT709: SWS_CS_ITU709
        case AVCOL_SPC_FCC: SWS_CS_FCC
        case AVCOL_SPC_SMPTE240M: SWS_CS_SMPTE240M
        case AVCOL_SPC_BT2020_NCL, AVCOL_SPC_BT2020_CL: SWS_CS_BT2020
        default: SWS_CS_ITU601
        }
    }
}

/// Decoded frames (any pixel format) to packed RGB of a fixed size.
/// A mid-stream change of size or format is absorbed by rebuilding the converter.
public final class FrameToRGB {
    public let outputSize: FrameSize
    private let color: ColorDescription
    private var converter: SwsContextBox?
    private var converterKey: (FrameSize, Int32)?

    public init(outputSize: FrameSize, color: ColorDescription) {
        self.outputSize = outputSize
        self.color = color
    }

    public func convert(_ frame: Frame, into image: RGBImage) throws(MediaError) {
        precondition(image.size == outputSize)
        let f = frame.pointer.pointee
        let frameMatrix = f.colorspace == AVCOL_SPC_UNSPECIFIED ? color.avMatrix : f.colorspace
        let fullRange = frame.sampleRange(stream: color.range) == .full
        // libswscale's 4:2:0 → RGB replicates each chroma sample over its 2×2 block (fast, 0.6 ms at
        // 1080p); RGBToFrame's box means undo exactly that, so chroma survives the round trip.
        let key = (FrameSize(width: Int(f.width), height: Int(f.height)), f.format)
        if converter == nil || converterKey! != key {
            let box = try SwsContextBox(source: key.0, sourceFormat: AVPixelFormat(rawValue: key.1),
                                        destination: outputSize, destinationFormat: AV_PIX_FMT_RGB24)
            box.setColorDetails(sourceMatrix: frameMatrix, sourceFullRange: fullRange,
                                destinationMatrix: frameMatrix, destinationFullRange: true)
            converter = box
            converterKey = key
        }
        let code = lf_sws_scale_to_packed(converter!.pointer, frame.pointer, image.baseAddress, Int32(image.bytesPerRow))
        if code <= 0 { throw .processing(FFmpegError(code: code, operation: "sws_scale to RGB")) }
    }
}

/// Packed RGB to the encoder's yuv420p (limited range, in the output's matrix).
/// The RGB image may be one pixel larger than the encoder size: odd sizes are cropped to even.
///
/// The conversion is the Swift `YUVConverter` (SIMD, both cores) with 2×2 box chroma, the inverse
/// of FrameToRGB's chroma replication: faster than libswscale's rgb24 → yuv420p, same result.
public final class RGBToFrame {
    public let size: FrameSize
    private let converter: YUVConverter
    private let pool: FramePool

    public init(size: FrameSize, color: ColorDescription) throws(MediaError) {
        self.size = size
        converter = YUVConverter(matrix: color.matrix.yuvMatrix, range: .limited, downsampling: .box)
        pool = FramePool(size: size, format: AV_PIX_FMT_YUV420P)
    }

    /// `image` grown to at least `size`, its last column and row repeated.
    static func edgeExtended(_ image: RGBImage, to size: FrameSize) -> RGBImage {
        let grown = RGBImage(width: max(image.width, size.width), height: max(image.height, size.height))
        for y in 0..<grown.height {
            let source = image.row(min(y, image.height - 1)), row = grown.row(y)
            row.update(from: source, count: image.width * 3)
            for x in image.width..<grown.width { (row + x * 3).update(from: source + (image.width - 1) * 3, count: 3) }
        }
        return grown
    }

    /// A new yuv420p frame holding `image`'s top-left `size` pixels. A picture narrower or shorter
    /// than `size` — a chain that makes a side of one pixel, where 4:2:0 takes at least two — has
    /// its last column and row repeated.
    public func convert(_ image: RGBImage) throws(MediaError) -> Frame {
        let image = image.width >= size.width && image.height >= size.height ? image : Self.edgeExtended(image, to: size)
        let frame = try pool.makeFrame()
        converter.rgbToYUV420(UnsafePointer(image.baseAddress), bytesPerRow: image.bytesPerRow, into: frame.planarView)
        return frame
    }
}

/// Frames backed by a buffer pool, so steady state allocates nothing per frame.
final class FramePool {
    let size: FrameSize
    let format: AVPixelFormat
    private let pool: OpaquePointer
    private let bufferSize: Int32
    private var linesizes: [Int32] = [0, 0, 0, 0]
    private var offsets: [Int] = [0, 0, 0, 0]

    init(size: FrameSize, format: AVPixelFormat) {
        self.size = size
        self.format = format
        let align: Int32 = 64
        var lines: (Int32, Int32, Int32, Int32) = (0, 0, 0, 0)
        withUnsafeMutablePointer(to: &lines) { p in
            p.withMemoryRebound(to: Int32.self, capacity: 4) {
                _ = av_image_fill_linesizes($0, format, Int32(size.width))
                for i in 0..<4 { $0[i] = ($0[i] + align - 1) / align * align }
            }
        }
        linesizes = [lines.0, lines.1, lines.2, lines.3]
        var heights: [Int] = [size.height, 0, 0, 0]
        if let desc = av_pix_fmt_desc_get(format) {
            let ch = Int(desc.pointee.log2_chroma_h)
            heights = [size.height, (size.height + (1 << ch) - 1) >> ch, (size.height + (1 << ch) - 1) >> ch, size.height]
        }
        var total = 0
        for i in 0..<4 where linesizes[i] > 0 {
            offsets[i] = total
            total += Int(linesizes[i]) * heights[i]
        }
        bufferSize = Int32(total + 64)
        pool = av_buffer_pool_init(Int(bufferSize), nil)
    }

    deinit {
        var p: OpaquePointer? = pool
        av_buffer_pool_uninit(&p)
    }

    func makeFrame() throws(MediaError) -> Frame {
        let frame = Frame()
        guard let buffer = av_buffer_pool_get(pool) else { throw .invalidSettings("out of memory for frames") }
        let f = frame.pointer
        f.pointee.buf.0 = buffer
        f.pointee.width = Int32(size.width)
        f.pointee.height = Int32(size.height)
        f.pointee.format = format.rawValue
        let base = buffer.pointee.data!
        withUnsafeMutablePointer(to: &f.pointee.data) { dp in
            dp.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { data in
                withUnsafeMutablePointer(to: &f.pointee.linesize) { lp in
                    lp.withMemoryRebound(to: Int32.self, capacity: 8) { lines in
                        for i in 0..<4 where linesizes[i] > 0 {
                            data[i] = base + offsets[i]
                            lines[i] = linesizes[i]
                        }
                    }
                }
            }
        }
        return frame
    }
}

/// New yuv420p pictures of one size for a pass that writes a picture from a decoded one plane by
/// plane (the planar chain: `PlanarFrameFilter` in Pipeline), from a buffer pool, so steady state
/// allocates nothing per frame. The planes cross as a `PlanarYUV420View`; no FFmpeg type does.
public final class PlanarFramePool {
    public let size: FrameSize
    private let pool: FramePool

    public init(size: FrameSize) {
        self.size = size
        pool = FramePool(size: size, format: AV_PIX_FMT_YUV420P)
    }

    /// A new frame whose planes `write` fills from `source`'s: tagged limited range (a planar pass
    /// writes limited range whatever it read) with `source`'s matrix.
    public func makeFrame(from source: Frame, write: (PlanarYUV420View) -> Void) throws(MediaError) -> Frame {
        let out = try pool.makeFrame()
        write(out.planarView)
        out.pointer.pointee.color_range = AVCOL_RANGE_MPEG
        out.pointer.pointee.colorspace = source.pointer.pointee.colorspace
        return out
    }
}

extension ColorMatrix {
    /// The Y′CbCr coefficients the converters and the planar chain use for this matrix (BT.601 for
    /// anything unlisted).
    public var yuvMatrix: YUVMatrix {
        switch self {
        case .bt709: .bt709
        case .bt2020nc, .bt2020c: .bt2020
        default: .bt601
        }
    }
}

extension Frame {
    /// The range of the frame's samples: its tag; untagged, the stream's `stream`; always full for
    /// the JPEG (`yuvj…`) formats. One rule for the RGB converter and the planar path.
    public func sampleRange(stream: ColorRange) -> ColorRange {
        let f = pointer.pointee
        if PixelFormat(AVPixelFormat(rawValue: f.format)).isFullRangeByDefault || f.color_range == AVCOL_RANGE_JPEG { return .full }
        return f.color_range == AVCOL_RANGE_UNSPECIFIED ? stream : .limited
    }

    /// The three planes of a yuv420p frame, as a view valid while the frame lives (check the
    /// format first: other layouts are not three 4:2:0 planes). A frame's rows own their padding
    /// up to the line size (FFmpeg's own SIMD writes it too).
    public var planarView: PlanarYUV420View {
        let f = pointer
        return PlanarYUV420View(
            width: Int(f.pointee.width), height: Int(f.pointee.height),
            y: lf_frame_data(f, 0), yStride: Int(lf_frame_linesize(f, 0)),
            u: lf_frame_data(f, 1), uStride: Int(lf_frame_linesize(f, 1)),
            v: lf_frame_data(f, 2), vStride: Int(lf_frame_linesize(f, 2)), ownsRowPadding: true)
    }

    /// Whether the frame is an 8-bit 4:2:0 picture (yuv420p or yuvj420p: three planes `planarView`
    /// describes) of `size` whose samples are in `range` (`sampleRange`, an untagged frame taken to
    /// be in the stream's `range`).
    public func isPlanarYUV420(size: FrameSize, range: ColorRange = .limited) -> Bool {
        let f = pointer.pointee
        return (f.format == AV_PIX_FMT_YUV420P.rawValue || f.format == AV_PIX_FMT_YUVJ420P.rawValue)
            && Int(f.width) == size.width && Int(f.height) == size.height && sampleRange(stream: range) == range
    }
}
