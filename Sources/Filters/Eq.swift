#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// Brightness, contrast, saturation and gamma: ffmpeg's `eq`, whose meaning is tables on the
/// 8-bit Y′, Cb and Cr codes of limited-range video. Here the picture is RGB, so the meaning is
/// stated on its BT.709 limited-range Y′CbCr: luma through `eq`'s luma table, each chroma
/// through its chroma table, back to RGB.
///
/// On the decoded planes of a BT.709 limited-range stream that is literally `eq`: a table per
/// plane, libavfilter's to the bit (`PlanarFilter`). On RGB each pixel's luma and chroma are
/// continuous, so the tables are read between their entries (linearly) and only the change is
/// added back: a neutral `eq` leaves RGB exactly as it was.
public struct Eq: Filter, Hashable {
    /// libavfilter's `eq` ranges and defaults (the neutral values).
    public enum Parameters {
        public static let brightness = NumericParameter<Double>("brightness", in: -1...1, default: 0,
                                                                summary: "added to luma, in units of the full range")
        public static let contrast = NumericParameter<Double>("contrast", in: -1000...1000, default: 1,
                                                              summary: "luma's spread around mid-grey")
        public static let saturation = NumericParameter<Double>("saturation", in: 0...3, default: 1,
                                                                summary: "chroma's scale: 0 is grey, 1 unchanged")
        public static let gamma = NumericParameter<Double>("gamma", in: 0.1...10, default: 1,
                                                           summary: "luma's power (above 1 brightens the mid-tones)")
    }

    @available(*, deprecated, renamed: "Parameters.brightness.range") public static var brightnessRange: ClosedRange<Double> { Parameters.brightness.range }
    @available(*, deprecated, renamed: "Parameters.contrast.range") public static var contrastRange: ClosedRange<Double> { Parameters.contrast.range }
    @available(*, deprecated, renamed: "Parameters.saturation.range") public static var saturationRange: ClosedRange<Double> { Parameters.saturation.range }
    @available(*, deprecated, renamed: "Parameters.gamma.range") public static var gammaRange: ClosedRange<Double> { Parameters.gamma.range }

    public var brightness: Double
    public var contrast: Double
    public var saturation: Double
    public var gamma: Double

    public init(brightness: Double = Parameters.brightness.defaultValue!, contrast: Double = Parameters.contrast.defaultValue!,
                saturation: Double = Parameters.saturation.defaultValue!, gamma: Double = Parameters.gamma.defaultValue!) {
        (self.brightness, self.contrast, self.saturation, self.gamma) = (brightness, contrast, saturation, gamma)
    }

    /// Each parameter with its value, in the grammar's order.
    private var values: [(NumericParameter<Double>, Double)] {
        [(Parameters.brightness, brightness), (Parameters.contrast, contrast), (Parameters.saturation, saturation), (Parameters.gamma, gamma)]
    }

    public var description: String {
        (["eq"] + values.compactMap { $0.argument($1) }).joined(separator: " ")
    }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        for (parameter, value) in values { try parameter.check(value, filter: description) }
        return input
    }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        _ = try outputSize(for: input)
        return EqRenderer(tables: tables, saturation: saturation, size: input)
    }

    /// The luma table and the chroma table, as libavfilter's `eq` computes them.
    var tables: (luma: [UInt8], chroma: [UInt8]) {
        (Self.table(brightness: brightness, contrast: contrast, gamma: gamma),
         Self.table(brightness: 0, contrast: saturation, gamma: 1))
    }

    /// What libavfilter does to one plane: nothing, its fixed-point affine routine
    /// `((v · c) >> 12) + b` clamped (gamma 1, |contrast| < 8), or a table.
    enum PlaneOperation: Equatable {
        case identity
        case affine(c: Int32, b: Int32)
        case table([UInt8])

        init(brightness: Double, contrast: Double, gamma: Double) {
            let brightness = Double(Float(brightness)), contrast = Double(Float(contrast)), gamma = Double(Float(gamma))
            if contrast == 1, brightness == 0, gamma == 1 { self = .identity; return }
            if gamma == 1, abs(contrast) < 8 {
                let c = Int(contrast * 256 * 16)
                self = .affine(c: Int32(c), b: Int32((Int(100 * brightness + 100) * 511) / 200 - 128 - c / 32))
                return
            }
            self = .table(Eq.table(brightness: brightness, contrast: contrast, gamma: gamma))
        }
    }

    var operations: (luma: PlaneOperation, chroma: PlaneOperation) {
        (PlaneOperation(brightness: brightness, contrast: contrast, gamma: gamma), PlaneOperation(brightness: 0, contrast: saturation, gamma: 1))
    }

    /// One plane's table. libavfilter runs a plane through one of three things: nothing (neutral),
    /// its fixed-point brightness/contrast routine (gamma 1, |contrast| < 8), or a table built in
    /// double precision; each is a function of the 8-bit code, so one table holds any of them.
    static func table(brightness: Double, contrast: Double, gamma: Double) -> [UInt8] {
        // libavfilter clips each parameter with av_clipf, i.e. through a Float: -0.2 arrives as
        // -0.200000003, and its fixed-point brightness truncates 79.9999997 to 79, not 80.
        let brightness = Double(Float(brightness)), contrast = Double(Float(contrast)), gamma = Double(Float(gamma))
        if contrast == 1, brightness == 0, gamma == 1 { return (0...255).map { UInt8($0) } }
        if gamma == 1, abs(contrast) < 8 {
            let c = Int(contrast * 256 * 16)
            let b = (Int(100 * brightness + 100) * 511) / 200 - 128 - c / 32
            return (0...255).map { code in
                let pel = ((code * c) >> 12) + b
                return UInt8(pel < 0 ? 0 : pel > 255 ? 255 : pel)
            }
        }
        let g = 1 / gamma
        return (0...255).map { code in
            var v = contrast * (Double(code) / 255 - 0.5) + 0.5 + brightness
            if v <= 0 { return 0 }
            v = pow(v, g)  // gamma_weight 1, eq's default
            return v >= 1 ? 255 : UInt8(256 * v)
        }
    }
}

private final class EqRenderer: FilterRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let bands: Int
    /// Per full-range luma 0…255 (BT.709 weights): the change eq's luma table makes, back in RGB
    /// levels, × 256. Chroma scales by the saturation: every channel's distance from luma × `k`/256.
    private let lumaDelta = ScratchBuffer<Int32>(count: 256, zero: 0)
    private let saturation: Int32
    /// Each channel's constant change × 256: libavfilter's chroma routine moves its centre a little
    /// (its fixed point rounds down), which shows as a faint tint.
    private let offsets: (r: Int32, g: Int32, b: Int32)
    /// Per band: a row of luma and a row of each pixel's base value.
    private let rowScratch: [ScratchBuffer<Int32>]

    init(tables: (luma: [UInt8], chroma: [UInt8]), saturation scale: Double, size: FrameSize) {
        inputSize = size
        bands = Parallel.bandCount(for: size.height, minimumPerBand: 32)
        // The chroma table is libavfilter's affine routine: C' = s'·C + offset, s' its fixed-point slope.
        let slope = Double(Int(Double(Float(scale)) * 4096)) / 4096
        saturation = Int32((slope * 256).rounded())
        var offset = 0.0
        for code in 16...240 { offset += Double(tables.chroma[code]) - 128 - slope * Double(code - 128) }
        offset /= 225
        // RGB levels per code of Cb and Cr (BT.709, limited range).
        let kr = 0.2126, kb = 0.0722, kg = 1 - kr - kb, perCode = 255.0 / 224
        let rCr = 2 * (1 - kr) * perCode, bCb = 2 * (1 - kb) * perCode
        let gCb = -2 * (1 - kb) * kb / kg * perCode, gCr = -2 * (1 - kr) * kr / kg * perCode
        offsets = (Int32((rCr * offset * 256).rounded()), Int32(((gCb + gCr) * offset * 256).rounded()), Int32((bCb * offset * 256).rounded()))
        rowScratch = (0..<bands).map { _ in ScratchBuffer<Int32>(count: 2 * size.width + 16, zero: 0) }
        // Luma's code on the limited-range scale is continuous here: read the table between entries.
        for y in 0...255 {
            let code = 16 + Double(y) * 219 / 255
            let i = min(254, Int(code)), f = code - Double(i)
            let mapped = Double(tables.luma[i]) * (1 - f) + Double(tables.luma[i + 1]) * f
            lumaDelta.base[y] = Int32(((mapped - code) * 255 / 219 * 256).rounded())
        }
    }

    func render(_ source: RGBImage, into destination: RGBImage) {
        let width = inputSize.width, table = lumaDelta, k = saturation, rows = rowScratch, offsets = offsets
        // BT.709 weights in 1/65536 (as grayscale's), summing to 65536.
        let (wr, wg, wb): (Int32, Int32, Int32) = (13933, 46871, 4732)
        Parallel.forEachBand(of: inputSize.height, bands: bands) { band, range in
            let delta = table.base
            // Two passes a row, each a loop the compiler vectorises: luma, then (after the table
            // look-up, which does not vectorise) the three channels.
            let lumaRow = rows[band].base, baseRow = rows[band].base + width
            for y in range {
                let s = source.row(y), d = destination.row(y)
                for x in 0..<width {
                    let p = 3 * x
                    lumaRow[x] = (wr &* Int32(s[p]) &+ wg &* Int32(s[p + 1]) &+ wb &* Int32(s[p + 2]) &+ 32768) >> 16
                }
                for x in 0..<width {
                    let luma = lumaRow[x]
                    baseRow[x] = (luma << 8) &+ delta[Int(luma)] &+ 128 &- k &* luma
                }
                // new = luma + Δ + k·(old − luma), all × 256, rounded: base + k·old.
                for x in 0..<width {
                    let p = 3 * x, base = baseRow[x]
                    d[p] = clamp8((base &+ offsets.r &+ k &* Int32(s[p])) >> 8)
                    d[p + 1] = clamp8((base &+ offsets.g &+ k &* Int32(s[p + 1])) >> 8)
                    d[p + 2] = clamp8((base &+ offsets.b &+ k &* Int32(s[p + 2])) >> 8)
                }
            }
        }
    }
}

@inline(__always) private func clamp8(_ v: Int32) -> UInt8 {
    UInt8(truncatingIfNeeded: min(255, max(0, v)))
}


extension Eq: PlanarFilter {
    /// On the planes only when they are BT.709 limited range, the Y′CbCr `eq`'s meaning is stated on.
    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        guard color.matrix == .bt709, color.range == .limited else { return nil }
        let operations = operations
        return PlaneOperationRenderer(size: picture.shifted(by: role.shift), operation: role == .luma ? operations.luma : operations.chroma)
    }
}

/// Each sample through libavfilter's operation for its plane: a copy, its affine fixed point
/// (a plain loop the compiler vectorises), or a 256-entry table.
final class PlaneOperationRenderer: PlaneRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let operation: Eq.PlaneOperation
    private let table = ScratchBuffer<UInt8>(count: 256, zero: 0)
    private let bands: Int

    init(size: FrameSize, operation: Eq.PlaneOperation) {
        inputSize = size
        self.operation = operation
        if case let .table(values) = operation { for (i, v) in values.enumerated() { table.base[i] = v } }
        // Memory-bound and quick: a band is worth its dispatch only from a few hundred rows.
        bands = Parallel.bandCount(for: size.height, minimumPerBand: 300)
    }

    func render(_ source: Plane, into destination: Plane) {
        let width = source.width, table = table, operation = operation
        Parallel.forEachBand(of: source.height, bands: bands) { _, rows in
            for y in rows {
                let s = source.row(y), d = destination.row(y)
                switch operation {
                case .identity:
                    d.update(from: s, count: width)
                case let .affine(c, b):
                    // (v·c) >> 12 as (16v · c) >> 16 on 16-bit lanes: c fits 16 bits for |contrast| < 8,
                    // and the compiler makes it one multiply-high per lane (libavfilter's SIMD does the same).
                    let b16 = Int16(truncatingIfNeeded: b)
                    if c >= 0 {
                        // (v·c) >> 12 on 16-bit lanes without a wide multiply: with c = 256·hi + lo,
                        // ⌊(256·v·hi + v·lo) / 4096⌋ = ⌊(v·hi + ⌊v·lo / 256⌋) / 16⌋, every term under 2¹⁶.
                        let hi = UInt16(c >> 8), lo = UInt16(c & 255)
                        for x in 0..<width {
                            let v = UInt16(s[x])
                            let scaled = Int16(bitPattern: (v &* hi &+ ((v &* lo) &>> 8)) &>> 4)
                            d[x] = UInt8(truncatingIfNeeded: min(255, max(0, scaled &+ b16)))
                        }
                    } else {
                        let c16 = Int32(Int16(truncatingIfNeeded: c))
                        for x in 0..<width {
                            let high = Int16(truncatingIfNeeded: (Int32(Int16(s[x]) << 4) &* c16) >> 16)
                            d[x] = UInt8(truncatingIfNeeded: min(255, max(0, high &+ b16)))
                        }
                    }
                case .table:
                    let lut = table.base
                    for x in 0..<width { d[x] = lut[Int(s[x])] }
                }
            }
        }
    }
}
