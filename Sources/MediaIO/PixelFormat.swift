/// How a picture's samples are laid out in memory: the formats livefilter meets by name, and
/// `.other` for the rest of FFmpeg's list, so a probe never loses what the input said.
///
/// Two values are equal when they name the same format: `.other("yuv420p") == .yuv420p`.
/// `PixelFormat(name:)` gives the named case where one exists.
public enum PixelFormat: Sendable, Hashable, CustomStringConvertible {
    /// Planar Y′CbCr 4:2:0, 8 bits: what H.264 cameras, phones and livefilter's encoder use.
    case yuv420p
    /// Planar Y′CbCr 4:2:0, 8 bits, full range (JPEG / MJPEG).
    case yuvj420p
    /// Planar Y′CbCr 4:2:2, 8 bits.
    case yuv422p
    /// Planar Y′CbCr 4:2:2, 8 bits, full range (JPEG / MJPEG).
    case yuvj422p
    /// Planar Y′CbCr 4:4:4, 8 bits.
    case yuv444p
    /// Planar Y′CbCr 4:4:4, 8 bits, full range (JPEG / MJPEG).
    case yuvj444p
    /// Planar Y′CbCr 4:2:0 with alpha, 8 bits.
    case yuva420p
    /// Y′ plane, then one plane of interleaved Cb Cr, 4:2:0, 8 bits (hardware decoders).
    case nv12
    /// As `nv12` with Cr before Cb.
    case nv21
    /// Planar Y′CbCr 4:2:0, 10 bits in 16-bit little-endian words (HDR and 10-bit H.264/HEVC).
    case yuv420p10le
    /// Planar Y′CbCr 4:2:2, 10 bits in 16-bit little-endian words.
    case yuv422p10le
    /// Planar Y′CbCr 4:4:4, 10 bits in 16-bit little-endian words.
    case yuv444p10le
    /// As `nv12` with 10 bits in the high bits of 16-bit little-endian words.
    case p010le
    /// Packed R G B, 8 bits each: livefilter's filter images and PNG output.
    case rgb24
    /// Packed B G R, 8 bits each.
    case bgr24
    /// Packed R G B A, 8 bits each.
    case rgba
    /// Packed B G R A, 8 bits each.
    case bgra
    /// Planar G B R 4:4:4, 8 bits.
    case gbrp
    /// Luma only, 8 bits.
    case gray
    /// 8-bit indices into a palette of 256 colours (GIF, some PNG).
    case pal8
    /// Any other format FFmpeg knows, by FFmpeg's name (e.g. "yuv440p").
    case other(String)
    /// The input states no pixel format.
    case unknown

    /// Whether the format's Y′CbCr samples span the full 0…255 range unless the stream says
    /// otherwise: the JPEG (`yuvj…`) formats with a case here.
    public var isFullRangeByDefault: Bool {
        switch self {
        case .yuvj420p, .yuvj422p, .yuvj444p: true
        default: false
        }
    }

    public var description: String { name }

    public static func == (a: PixelFormat, b: PixelFormat) -> Bool { a.name == b.name }

    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}
