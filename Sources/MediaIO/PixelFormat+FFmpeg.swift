import CFFmpeg

// The one place a PixelFormat meets FFmpeg's AVPixelFormat.

extension PixelFormat {
    /// FFmpeg's name for the format ("yuv420p", "nv12", …), for display; "unknown" for `.unknown`.
    public var name: String {
        if case let .other(name) = self { return name }
        return av_get_pix_fmt_name(av).map { String(cString: $0) } ?? "unknown"
    }

    /// The format FFmpeg calls `name` ("yuv420p", "yuv440p", …): its case where it has one, else
    /// `.other(name)`. Nil when FFmpeg has no such format.
    public init?(name: String) {
        let format = av_get_pix_fmt(name)
        if format == AV_PIX_FMT_NONE { return nil }
        self.init(format)
    }

    /// Bits per sample of the first component (8 for yuv420p and rgb24, 10 for yuv420p10le);
    /// nil for a format FFmpeg does not describe.
    public var bitDepth: Int? {
        guard let descriptor = av_pix_fmt_desc_get(av) else { return nil }
        return Int(descriptor.pointee.comp.0.depth)
    }

    init(_ format: AVPixelFormat) {
        switch format {
        case AV_PIX_FMT_YUV420P: self = .yuv420p
        case AV_PIX_FMT_YUVJ420P: self = .yuvj420p
        case AV_PIX_FMT_YUV422P: self = .yuv422p
        case AV_PIX_FMT_YUVJ422P: self = .yuvj422p
        case AV_PIX_FMT_YUV444P: self = .yuv444p
        case AV_PIX_FMT_YUVJ444P: self = .yuvj444p
        case AV_PIX_FMT_YUVA420P: self = .yuva420p
        case AV_PIX_FMT_NV12: self = .nv12
        case AV_PIX_FMT_NV21: self = .nv21
        case AV_PIX_FMT_YUV420P10LE: self = .yuv420p10le
        case AV_PIX_FMT_YUV422P10LE: self = .yuv422p10le
        case AV_PIX_FMT_YUV444P10LE: self = .yuv444p10le
        case AV_PIX_FMT_P010LE: self = .p010le
        case AV_PIX_FMT_RGB24: self = .rgb24
        case AV_PIX_FMT_BGR24: self = .bgr24
        case AV_PIX_FMT_RGBA: self = .rgba
        case AV_PIX_FMT_BGRA: self = .bgra
        case AV_PIX_FMT_GBRP: self = .gbrp
        case AV_PIX_FMT_GRAY8: self = .gray
        case AV_PIX_FMT_PAL8: self = .pal8
        default: self = av_get_pix_fmt_name(format).map { .other(String(cString: $0)) } ?? .unknown
        }
    }

    /// FFmpeg's AVPixelFormat (AV_PIX_FMT_NONE for `.unknown` or a name FFmpeg does not know).
    var av: AVPixelFormat {
        switch self {
        case .yuv420p: AV_PIX_FMT_YUV420P
        case .yuvj420p: AV_PIX_FMT_YUVJ420P
        case .yuv422p: AV_PIX_FMT_YUV422P
        case .yuvj422p: AV_PIX_FMT_YUVJ422P
        case .yuv444p: AV_PIX_FMT_YUV444P
        case .yuvj444p: AV_PIX_FMT_YUVJ444P
        case .yuva420p: AV_PIX_FMT_YUVA420P
        case .nv12: AV_PIX_FMT_NV12
        case .nv21: AV_PIX_FMT_NV21
        case .yuv420p10le: AV_PIX_FMT_YUV420P10LE
        case .yuv422p10le: AV_PIX_FMT_YUV422P10LE
        case .yuv444p10le: AV_PIX_FMT_YUV444P10LE
        case .p010le: AV_PIX_FMT_P010LE
        case .rgb24: AV_PIX_FMT_RGB24
        case .bgr24: AV_PIX_FMT_BGR24
        case .rgba: AV_PIX_FMT_RGBA
        case .bgra: AV_PIX_FMT_BGRA
        case .gbrp: AV_PIX_FMT_GBRP
        case .gray: AV_PIX_FMT_GRAY8
        case .pal8: AV_PIX_FMT_PAL8
        case let .other(name): av_get_pix_fmt(name)
        case .unknown: AV_PIX_FMT_NONE
        }
    }
}
