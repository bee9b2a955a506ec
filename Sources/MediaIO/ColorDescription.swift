import struct Filters.FrameSize

/// Colour tags of a stream: how to turn its Y′CbCr samples into colours (ITU-T H.273's
/// matrix coefficients, colour primaries and transfer characteristics, plus the sample range).
///
/// Tags an input does not state read as `.unspecified` (and `.limited` for the range); codes
/// that H.273 reserves read as `.unspecified` too. Each tag's raw value is its name in FFmpeg and
/// ffprobe ("bt709", "smpte170m", "tv", …), for display.
public struct ColorDescription: Sendable, Hashable {
    public var matrix: ColorMatrix
    public var primaries: ColorPrimaries
    public var transfer: TransferCharacteristic
    public var range: ColorRange

    /// A description; what is not given is unstated (`ColorDescription()` is an untagged stream).
    public init(matrix: ColorMatrix = .unspecified, primaries: ColorPrimaries = .unspecified,
                transfer: TransferCharacteristic = .unspecified, range: ColorRange = .limited) {
        self.matrix = matrix
        self.primaries = primaries
        self.transfer = transfer
        self.range = range
    }
}

/// The Y′CbCr ↔ R′G′B′ matrix (H.273 MatrixCoefficients).
public enum ColorMatrix: String, Sendable, CaseIterable {
    /// The identity: samples are G, B, R (RGB and GBR pictures, not Y′CbCr).
    case rgb = "gbr"
    /// ITU-R BT.709: HD video.
    case bt709
    case unspecified = "unknown"
    /// FCC Title 47 (NTSC 1953).
    case fcc
    /// ITU-R BT.601 625-line (PAL, SECAM); the same coefficients as `smpte170m`.
    case bt470bg
    /// SMPTE 170M, ITU-R BT.601 525-line (NTSC): SD video.
    case smpte170m
    /// SMPTE 240M (early HDTV).
    case smpte240m
    /// YCgCo.
    case ycgco
    /// ITU-R BT.2020 non-constant luminance: UHD and HDR video.
    case bt2020nc
    /// ITU-R BT.2020 constant luminance.
    case bt2020c
    /// SMPTE ST 2085 (Y′D′zD′x).
    case smpte2085
    /// Chromaticity-derived non-constant luminance.
    case chromaDerivedNC = "chroma-derived-nc"
    /// Chromaticity-derived constant luminance.
    case chromaDerivedC = "chroma-derived-c"
    /// ITU-R BT.2100 ICtCp.
    case ictcp
}

/// The chromaticities of the red, green and blue primaries and the white point (H.273 ColourPrimaries).
public enum ColorPrimaries: String, Sendable, CaseIterable {
    /// ITU-R BT.709 (also sRGB): HD video.
    case bt709
    case unspecified = "unknown"
    /// ITU-R BT.470 System M (NTSC 1953).
    case bt470m
    /// ITU-R BT.601 625-line, BT.470 System B/G (PAL, SECAM).
    case bt470bg
    /// SMPTE 170M, ITU-R BT.601 525-line (NTSC): SD video.
    case smpte170m
    /// SMPTE 240M (the same primaries as `smpte170m`).
    case smpte240m
    /// Generic film (colour filters using Illuminant C).
    case film
    /// ITU-R BT.2020: UHD and HDR video.
    case bt2020
    /// SMPTE ST 428-1 (CIE 1931 XYZ).
    case smpte428
    /// SMPTE RP 431-2: DCI-P3.
    case smpte431
    /// SMPTE EG 432-1: P3 with a D65 white point (Display P3).
    case smpte432
    /// EBU Tech. 3213-E (JEDEC P22 phosphors).
    case ebu3213
}

/// The opto-electronic transfer function, i.e. the gamma curve (H.273 TransferCharacteristics).
public enum TransferCharacteristic: String, Sendable, CaseIterable {
    /// ITU-R BT.709: HD video.
    case bt709
    case unspecified = "unknown"
    /// Gamma 2.2 (ITU-R BT.470 System M).
    case gamma22 = "bt470m"
    /// Gamma 2.8 (ITU-R BT.470 System B/G).
    case gamma28 = "bt470bg"
    /// SMPTE 170M, ITU-R BT.601: SD video (the same curve as `bt709`).
    case smpte170m
    /// SMPTE 240M.
    case smpte240m
    /// Linear light.
    case linear
    /// Logarithmic, 100:1 range.
    case log100
    /// Logarithmic, 100·√10:1 range.
    case log316
    /// IEC 61966-2-4 (xvYCC).
    case iec61966_2_4 = "iec61966-2-4"
    /// ITU-R BT.1361 extended colour gamut.
    case bt1361 = "bt1361e"
    /// IEC 61966-2-1: sRGB and sYCC.
    case iec61966_2_1 = "iec61966-2-1"
    /// ITU-R BT.2020 for 10-bit systems.
    case bt2020_10 = "bt2020-10"
    /// ITU-R BT.2020 for 12-bit systems.
    case bt2020_12 = "bt2020-12"
    /// SMPTE ST 2084: PQ (HDR10).
    case smpte2084
    /// SMPTE ST 428-1.
    case smpte428
    /// ARIB STD-B67: hybrid log-gamma (HLG).
    case aribStdB67 = "arib-std-b67"
}

/// Which sample values mean black and white.
public enum ColorRange: String, Sendable, CaseIterable {
    /// 16…235 for Y′ and 16…240 for Cb, Cr at 8 bits ("TV" or "MPEG" range): video's default,
    /// and what a stream that does not say is taken to use.
    case limited = "tv"
    /// 0…255 at 8 bits ("PC" or "JPEG" range).
    case full = "pc"
}

extension ColorDescription {
    /// BT.709 limited range, the tags of HD video and of livefilter's synthetic test streams.
    public static let bt709 = ColorDescription(matrix: .bt709, primaries: .bt709, transfer: .bt709, range: .limited)

    /// SMPTE 170M (BT.601 525-line) limited range, the tags livefilter gives untagged SD video.
    public static let smpte170m = ColorDescription(matrix: .smpte170m, primaries: .smpte170m, transfer: .smpte170m,
                                                   range: .limited)

    /// The colour tags of an encoded output made from a source tagged `source` whose pictures are
    /// `size`: each of matrix, primaries and transfer is the source's where it states one, else
    /// the usual guess from the size, BT.709 for HD (height ≥ 720 or width ≥ 1280) and SMPTE 170M
    /// (BT.601) for SD, as players guess for untagged video. An `.rgb` matrix counts as unstated:
    /// the output is Y′CbCr. The range is always limited, the range livefilter encodes in.
    public static func outputTags(forSource source: ColorDescription, size: FrameSize) -> ColorDescription {
        let guess: ColorDescription = size.height >= 720 || size.width >= 1280 ? .bt709 : .smpte170m
        return ColorDescription(
            matrix: source.matrix == .unspecified || source.matrix == .rgb ? guess.matrix : source.matrix,
            primaries: source.primaries == .unspecified ? guess.primaries : source.primaries,
            transfer: source.transfer == .unspecified ? guess.transfer : source.transfer,
            range: .limited)
    }
}
