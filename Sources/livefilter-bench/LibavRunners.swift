import CFFmpeg
import Filters

struct BenchFailure: Error, CustomStringConvertible {
    var description: String
}

func check(_ code: Int32, _ what: String) throws {
    guard code >= 0 else {
        var buffer = [CChar](repeating: 0, count: 256)
        let text = buffer.withUnsafeMutableBufferPointer { String(cString: lf_err2str(code, $0.baseAddress, 256)) }
        throw BenchFailure(description: "\(what) failed: \(text) (\(code))")
    }
}

func copyRows(_ rows: Int, bytes: Int, from source: UnsafePointer<UInt8>, _ sourceStride: Int,
              to destination: UnsafeMutablePointer<UInt8>, _ destinationStride: Int) {
    for y in 0..<rows {
        (destination + y * destinationStride).update(from: source + y * sourceStride, count: bytes)
    }
}

/// A libavfilter graph `buffer → <graph> → format=rgb24 → buffersink`, configured once, that filters
/// the same rgb24 frame again and again (the source frame is kept, so each run does the full work).
final class FilterGraphRunner {
    private var graph: UnsafeMutablePointer<AVFilterGraph>?
    private var source: UnsafeMutablePointer<AVFilterContext>?
    private var sink: UnsafeMutablePointer<AVFilterContext>?
    private var input: UnsafeMutablePointer<AVFrame>?
    private var output: UnsafeMutablePointer<AVFrame>?
    private var pts: Int64 = 0

    /// An RGB graph: the frame goes in as rgb24 and comes out as rgb24.
    convenience init(_ graphText: String, image: RGBImage, threads: Int) throws {
        try self.init(graphText + ",format=rgb24", size: image.size, format: AV_PIX_FMT_RGB24, threads: threads)
        copyRows(image.height, bytes: 3 * image.width, from: UnsafePointer(image.baseAddress), image.bytesPerRow,
                 to: lf_frame_data(input, 0), Int(lf_frame_linesize(input, 0)))
    }

    /// ffmpeg's natural graph on decoded video: yuv420p in, whatever the graph gives out (no forced format).
    convenience init(_ graphText: String, planes: PlanarYUV420View, threads: Int) throws {
        try self.init(graphText, size: FrameSize(planes.width, planes.height), format: AV_PIX_FMT_YUV420P, threads: threads)
        copyRows(planes.height, bytes: planes.width, from: planes.y, planes.yStride, to: lf_frame_data(input, 0), Int(lf_frame_linesize(input, 0)))
        copyRows(planes.chromaHeight, bytes: planes.chromaWidth, from: planes.u, planes.uStride, to: lf_frame_data(input, 1), Int(lf_frame_linesize(input, 1)))
        copyRows(planes.chromaHeight, bytes: planes.chromaWidth, from: planes.v, planes.vStride, to: lf_frame_data(input, 2), Int(lf_frame_linesize(input, 2)))
    }

    private init(_ graphText: String, size: FrameSize, format: AVPixelFormat, threads: Int) throws {
        graph = avfilter_graph_alloc()
        guard let graph else { throw BenchFailure(description: "avfilter_graph_alloc") }
        graph.pointee.nb_threads = Int32(threads)
        let args = "video_size=\(size.width)x\(size.height):pix_fmt=\(format.rawValue):time_base=1/25:pixel_aspect=1/1"
        try check(avfilter_graph_create_filter(&source, avfilter_get_by_name("buffer"), "in", args, nil, graph), "buffer")
        try check(avfilter_graph_create_filter(&sink, avfilter_get_by_name("buffersink"), "out", nil, nil, graph), "buffersink")
        var outputs = avfilter_inout_alloc()
        var inputs = avfilter_inout_alloc()
        defer { avfilter_inout_free(&outputs); avfilter_inout_free(&inputs) }
        outputs!.pointee.name = av_strdup("in")
        outputs!.pointee.filter_ctx = source
        inputs!.pointee.name = av_strdup("out")
        inputs!.pointee.filter_ctx = sink
        try check(avfilter_graph_parse_ptr(graph, graphText, &inputs, &outputs, nil), "parse \(graphText)")
        try check(avfilter_graph_config(graph, nil), "avfilter_graph_config")
        input = av_frame_alloc()
        output = av_frame_alloc()
        input!.pointee.width = Int32(size.width)
        input!.pointee.height = Int32(size.height)
        input!.pointee.format = format.rawValue
        try check(av_frame_get_buffer(input, 0), "av_frame_get_buffer")
    }

    deinit {
        av_frame_free(&input)
        av_frame_free(&output)
        avfilter_graph_free(&graph)
    }

    /// Filters the frame once; the result stays in `output` until the next run.
    func run() throws {
        av_frame_unref(output)
        input!.pointee.pts = pts
        pts += 1
        try check(av_buffersrc_add_frame_flags(source, input, Int32(AV_BUFFERSRC_FLAG_KEEP_REF)), "av_buffersrc_add_frame")
        try check(av_buffersink_get_frame(sink, output), "av_buffersink_get_frame")
    }

    func result() -> RGBImage {
        let image = RGBImage(width: Int(output!.pointee.width), height: Int(output!.pointee.height))
        copyRows(image.height, bytes: 3 * image.width, from: lf_frame_data(output, 0), Int(lf_frame_linesize(output, 0)),
                 to: image.baseAddress, image.bytesPerRow)
        return image
    }
}

/// A libswscale context between fixed formats and sizes with a given thread count.
final class SwsRunner {
    let pointer: OpaquePointer
    let frame: UnsafeMutablePointer<AVFrame>?

    init(source: FrameSize, sourceFormat: AVPixelFormat, destination: FrameSize, destinationFormat: AVPixelFormat,
         flags: Int32, threads: Int, matrix: Int32 = SWS_CS_ITU709, fullRangeYUV: Bool = false, leftSitedChroma: Bool = false) throws {
        guard let ctx = sws_alloc_context() else { throw BenchFailure(description: "sws_alloc_context") }
        let raw = UnsafeMutableRawPointer(ctx)
        av_opt_set_int(raw, "srcw", Int64(source.width), 0)
        av_opt_set_int(raw, "srch", Int64(source.height), 0)
        av_opt_set_int(raw, "src_format", Int64(sourceFormat.rawValue), 0)
        av_opt_set_int(raw, "dstw", Int64(destination.width), 0)
        av_opt_set_int(raw, "dsth", Int64(destination.height), 0)
        av_opt_set_int(raw, "dst_format", Int64(destinationFormat.rawValue), 0)
        av_opt_set_int(raw, "sws_flags", Int64(flags), 0)
        av_opt_set_int(raw, "threads", Int64(threads), 0)
        if leftSitedChroma {
            // H.264's default chroma location: x co-sited with even columns, y between rows (1/256 luma units).
            let side = sourceFormat == AV_PIX_FMT_YUV420P ? "src" : "dst"
            av_opt_set_int(raw, "\(side)_h_chr_pos", 0, 0)
            av_opt_set_int(raw, "\(side)_v_chr_pos", 128, 0)
        }
        guard sws_init_context(ctx, nil, nil) >= 0 else {
            sws_freeContext(ctx)
            throw BenchFailure(description: "sws_init_context")
        }
        pointer = ctx
        let coefficients = sws_getCoefficients(matrix)
        if sourceFormat == AV_PIX_FMT_RGB24 {
            sws_setColorspaceDetails(ctx, coefficients, 1, coefficients, fullRangeYUV ? 1 : 0, 0, 1 << 16, 1 << 16)
        } else {
            sws_setColorspaceDetails(ctx, coefficients, fullRangeYUV ? 1 : 0, coefficients, 1, 0, 1 << 16, 1 << 16)
        }
        let planar = sourceFormat == AV_PIX_FMT_YUV420P ? source : destinationFormat == AV_PIX_FMT_YUV420P ? destination : nil
        if let planar {
            var f = av_frame_alloc()
            f!.pointee.width = Int32(planar.width)
            f!.pointee.height = Int32(planar.height)
            f!.pointee.format = AV_PIX_FMT_YUV420P.rawValue
            if av_frame_get_buffer(f, 64) < 0 { av_frame_free(&f) }
            frame = f
        } else {
            frame = nil
        }
    }

    deinit {
        var f = frame
        av_frame_free(&f)
        sws_freeContext(pointer)
    }

    func scale(_ image: RGBImage, into result: RGBImage) throws {
        let rows = lf_sws_scale_packed(pointer, image.baseAddress, Int32(image.bytesPerRow), Int32(image.height),
                                       result.baseAddress, Int32(result.bytesPerRow))
        guard rows == Int32(result.height) else { throw BenchFailure(description: "sws_scale returned \(rows)") }
    }

    func toYUV(_ image: RGBImage) throws {
        let rows = lf_sws_scale_from_packed(pointer, image.baseAddress, Int32(image.bytesPerRow), Int32(image.height), frame)
        guard rows > 0 else { throw BenchFailure(description: "sws_scale to yuv returned \(rows)") }
    }

    func fromYUV(into image: RGBImage) throws {
        let rows = lf_sws_scale_to_packed(pointer, frame, image.baseAddress, Int32(image.bytesPerRow))
        guard rows > 0 else { throw BenchFailure(description: "sws_scale to rgb returned \(rows)") }
    }

    /// The planes of the yuv420p frame, for our converter to read or write the same memory layout.
    var view: PlanarYUV420View {
        let f = frame!
        return PlanarYUV420View(width: Int(f.pointee.width), height: Int(f.pointee.height),
                                y: lf_frame_data(f, 0), yStride: Int(lf_frame_linesize(f, 0)),
                                u: lf_frame_data(f, 1), uStride: Int(lf_frame_linesize(f, 1)),
                                v: lf_frame_data(f, 2), vStride: Int(lf_frame_linesize(f, 2)))
    }
}
