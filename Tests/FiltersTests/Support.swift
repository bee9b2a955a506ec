import CFFmpeg
import Dispatch
import FilterReferences
import Filters
import Foundation

/// Independent oracles: libavfilter and libswscale through their C API, and plain double-precision
/// references. Golden values always come from here, never from the code under test.
enum Oracle {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private static func check(_ code: Int32, _ what: String) throws {
        guard code >= 0 else {
            var buffer = [CChar](repeating: 0, count: 256)
            let text = buffer.withUnsafeMutableBufferPointer { String(cString: lf_err2str(code, $0.baseAddress, 256)) }
            throw Failure(description: "\(what) failed: \(text) (\(code))")
        }
    }

    /// Runs one rgb24 frame through `buffer → <graph> → format=rgb24 → buffersink`; the frame's
    /// time is `pts` × `timeBase` (for filters that depend on it, such as `fade`).
    static func libavfilter(_ graphText: String, _ image: RGBImage, pts: Int64 = 0, timeBase: String = "1/25") throws -> RGBImage {
        var result: RGBImage?
        try runGraph(graphText, width: image.width, height: image.height, format: AV_PIX_FMT_RGB24, timeBase: timeBase, fill: { frame in
            frame.pointee.pts = pts
            copy(rows: image.height, bytes: 3 * image.width, from: UnsafePointer(image.baseAddress), image.bytesPerRow,
                 to: lf_frame_data(frame, 0), Int(lf_frame_linesize(frame, 0)))
        }, read: { output in
            let image = RGBImage(width: Int(output.pointee.width), height: Int(output.pointee.height))
            copy(rows: image.height, bytes: 3 * image.width, from: lf_frame_data(output, 0), Int(lf_frame_linesize(output, 0)),
                 to: image.baseAddress, image.bytesPerRow)
            result = image
        })
        return result!
    }

    /// `buffer → <graph>,format=F → buffersink` for one frame of `format`: `fill` writes the input
    /// frame, `read` takes the output.
    private static func runGraph(_ graphText: String, width: Int, height: Int, format: AVPixelFormat, timeBase: String = "1/25",
                                 fill: (UnsafeMutablePointer<AVFrame>) throws -> Void,
                                 read: (UnsafeMutablePointer<AVFrame>) throws -> Void) throws {
        lf_log_quiet(AV_LOG_ERROR)
        var graph: UnsafeMutablePointer<AVFilterGraph>? = avfilter_graph_alloc()
        guard graph != nil else { throw Failure(description: "avfilter_graph_alloc") }
        defer { avfilter_graph_free(&graph) }
        var source: UnsafeMutablePointer<AVFilterContext>?
        var sink: UnsafeMutablePointer<AVFilterContext>?
        let args = "video_size=\(width)x\(height):pix_fmt=\(format.rawValue):time_base=\(timeBase):pixel_aspect=1/1"
        try check(avfilter_graph_create_filter(&source, avfilter_get_by_name("buffer"), "in", args, nil, graph), "buffer")
        try check(avfilter_graph_create_filter(&sink, avfilter_get_by_name("buffersink"), "out", nil, nil, graph), "buffersink")
        var outputs = avfilter_inout_alloc()
        var inputs = avfilter_inout_alloc()
        defer { avfilter_inout_free(&outputs); avfilter_inout_free(&inputs) }
        outputs!.pointee.name = av_strdup("in")
        outputs!.pointee.filter_ctx = source
        inputs!.pointee.name = av_strdup("out")
        inputs!.pointee.filter_ctx = sink
        let formatName = String(cString: av_get_pix_fmt_name(format))
        try check(avfilter_graph_parse_ptr(graph, "\(graphText),format=\(formatName)", &inputs, &outputs, nil), "parse \(graphText)")
        try check(avfilter_graph_config(graph, nil), "avfilter_graph_config")
        var frame = av_frame_alloc()
        defer { av_frame_free(&frame) }
        frame!.pointee.width = Int32(width)
        frame!.pointee.height = Int32(height)
        frame!.pointee.format = format.rawValue
        try check(av_frame_get_buffer(frame, 0), "av_frame_get_buffer")
        try fill(frame!)
        try check(av_buffersrc_add_frame(source, frame), "av_buffersrc_add_frame")
        try check(av_buffersrc_add_frame(source, nil), "av_buffersrc_add_frame(EOF)")
        var output = av_frame_alloc()
        defer { av_frame_free(&output) }
        try check(av_buffersink_get_frame(sink, output), "av_buffersink_get_frame")
        try read(output!)
    }

    /// Three 8-bit planes of a 4:2:0 picture, tightly packed.
    struct YUV420: Equatable {
        var width: Int, height: Int
        var y: [UInt8], u: [UInt8], v: [UInt8]
        var chromaWidth: Int { (width + 1) / 2 }
        var chromaHeight: Int { (height + 1) / 2 }
    }

    /// Runs one yuv420p frame (tagged BT.709, limited range) through `buffer → <graph> → buffersink`.
    static func libavfilter(_ graphText: String, _ picture: YUV420) throws -> YUV420 {
        var result = picture
        let sizes = [(picture.width, picture.height), (picture.chromaWidth, picture.chromaHeight), (picture.chromaWidth, picture.chromaHeight)]
        try runGraph(graphText, width: picture.width, height: picture.height, format: AV_PIX_FMT_YUV420P, fill: { frame in
            frame.pointee.color_range = AVCOL_RANGE_MPEG
            frame.pointee.colorspace = AVCOL_SPC_BT709
            for (index, plane) in [picture.y, picture.u, picture.v].enumerated() {
                plane.withUnsafeBufferPointer {
                    copy(rows: sizes[index].1, bytes: sizes[index].0, from: $0.baseAddress!, sizes[index].0,
                         to: lf_frame_data(frame, Int32(index)), Int(lf_frame_linesize(frame, Int32(index))))
                }
            }
        }, read: { output in
            for index in 0..<3 {
                let (w, h) = sizes[index]
                var bytes = [UInt8](repeating: 0, count: w * h)
                bytes.withUnsafeMutableBufferPointer {
                    copy(rows: h, bytes: w, from: lf_frame_data(output, Int32(index)), Int(lf_frame_linesize(output, Int32(index))),
                         to: $0.baseAddress!, w)
                }
                if index == 0 { result.y = bytes } else if index == 1 { result.u = bytes } else { result.v = bytes }
            }
        })
        return result
    }

    /// libswscale rgb24 → rgb24 with `flags` (e.g. SWS_BICUBIC) and full-resolution chroma, so
    /// its internal YUV step does not halve the colour resolution.
    static func libswscale(_ image: RGBImage, to size: FrameSize, flags: Int32) throws -> RGBImage {
        let allFlags = flags | Int32(SWS_FULL_CHR_H_INT) | Int32(SWS_FULL_CHR_H_INP) | Int32(SWS_ACCURATE_RND)
        guard let context = sws_getContext(Int32(image.width), Int32(image.height), AV_PIX_FMT_RGB24,
                                           Int32(size.width), Int32(size.height), AV_PIX_FMT_RGB24,
                                           allFlags, nil, nil, nil) else {
            throw Failure(description: "sws_getContext")
        }
        defer { sws_freeContext(context) }
        let result = RGBImage(size: size)
        let rows = lf_sws_scale_packed(context, image.baseAddress, Int32(image.bytesPerRow), Int32(image.height),
                                       result.baseAddress, Int32(result.bytesPerRow))
        guard rows == Int32(size.height) else { throw Failure(description: "sws_scale returned \(rows)") }
        return result
    }

    private static func copy(rows: Int, bytes: Int, from source: UnsafePointer<UInt8>, _ sourceStride: Int,
                             to destination: UnsafeMutablePointer<UInt8>, _ destinationStride: Int) {
        for y in 0..<rows {
            (destination + y * destinationStride).update(from: source + y * sourceStride, count: bytes)
        }
    }

    /// Exact separable Gaussian in double precision, clamp-to-edge (FilterReferences).
    static func gaussianBlur(_ image: RGBImage, sigma: Double) -> RGBImage {
        exactGaussian(image, sigma: sigma)
    }
}

func render(_ filter: any Filter, _ image: RGBImage) throws -> RGBImage {
    let renderer = try filter.makeRenderer(for: image.size)
    let output = RGBImage(size: renderer.outputSize)
    renderer.render(image, into: output)
    return output
}

/// Natural test images are expensive at 1080p: make each size once.
enum Images {
    private static let cache = Cache()
    static func natural(_ width: Int, _ height: Int, seed: UInt64 = 1) -> RGBImage {
        cache.image(width, height, seed)
    }

    private final class Cache: @unchecked Sendable {
        private let lock = NSLock()
        private var images: [String: RGBImage] = [:]
        func image(_ w: Int, _ h: Int, _ seed: UInt64) -> RGBImage {
            lock.lock(); defer { lock.unlock() }
            let key = "\(w)x\(h)#\(seed)"
            if let image = images[key] { return image }
            let image = SyntheticImage.natural(width: w, height: h, seed: seed)
            images[key] = image
            return image
        }
    }
}
