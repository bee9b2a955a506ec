#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A quarter-turn rotation, named from the viewer's side.
public enum Rotation: Int, CaseIterable, Sendable {
    case clockwise = 1
    case upsideDown = 2
    case counterClockwise = 3
}

/// Rotates the picture about its centre. Positive angles turn it clockwise as seen on screen
/// (like ffmpeg `transpose=clock` or CSS `rotate(90deg)`).
///
/// Multiples of 90° are exact pixel moves (and fuse with mirrors in a chain). Other angles sample
/// bilinearly; `.expand` grows the canvas to the rotated bounding box, `.keep` keeps the input
/// size and cuts the corners; uncovered pixels get `fill`.
public struct Rotate: Filter, D4Representable, Hashable {
    public enum Canvas: String, CaseIterable, Sendable {
        case expand, keep
    }

    public enum Parameters {
        /// A hundred turns either way: more is a typing slip, not a rotation.
        public static let angle = NumericParameter<Double>("angle", in: -36000...36000,
                                                           summary: "degrees clockwise (negative: counter-clockwise)")
        public static let mode = ValueParameter<Canvas>.choice("mode", default: .expand,
                                                                summary: "expand: canvas grows to the rotated box; keep: same size, corners cut")
        public static let fill = ValueParameter<RGBColor>.color("fill", default: .black, summary: "colour of uncovered pixels")
    }

    public var degrees: Double
    public var canvas: Canvas
    public var fill: RGBColor

    public init(degrees: Double, canvas: Canvas = Parameters.mode.defaultValue, fill: RGBColor = Parameters.fill.defaultValue) {
        self.degrees = degrees
        self.canvas = canvas
        self.fill = fill
    }

    /// `quarterTurns` turns of 90° clockwise; negative values turn counter-clockwise.
    public init(quarterTurns: Int) {
        self.init(degrees: Double(quarterTurns) * 90)
    }

    public init(_ rotation: Rotation) {
        self.init(quarterTurns: rotation.rawValue)
    }

    public static let clockwise = Rotate(.clockwise)
    public static let counterClockwise = Rotate(.counterClockwise)
    public static let upsideDown = Rotate(.upsideDown)

    /// Quarter turns when `degrees` is a multiple of 90, else nil.
    var quarterTurns: Int? {
        let turns = degrees / 90
        guard turns == turns.rounded(), abs(turns) < 1e9 else { return nil }
        return Int(turns)
    }

    func d4Transform(for input: FrameSize) -> D4Transform? {
        guard let turns = quarterTurns else { return nil }
        // With `keep`, a quarter turn of a non-square frame is not a pixel move: it crops and fills.
        if canvas == .keep, turns % 2 != 0, input.width != input.height { return nil }
        return .rotation(quarterTurns: turns)
    }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        try Parameters.angle.check(degrees, filter: description)
        if let exact = d4Transform(for: input) { return exact.outputSize(for: input) }
        if canvas == .keep { return input }
        let radians = degrees * .pi / 180
        let c = abs(cos(radians)), s = abs(sin(radians))
        let w = Double(input.width), h = Double(input.height)
        // Bounding box of the rotated frame, rounded up (minus a hair so 1e-15 noise does not add a pixel).
        return FrameSize(width: max(1, Int((w * c + h * s - 1e-6).rounded(.up))),
                         height: max(1, Int((w * s + h * c - 1e-6).rounded(.up))))
    }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        let output = try outputSize(for: input)
        if let exact = d4Transform(for: input) { return D4Renderer(transform: exact, inputSize: input) }
        return BilinearRotateRenderer(degrees: degrees, fill: fill, inputSize: input, outputSize: output)
    }

    public var description: String {
        var text = "rotate \(formatNumber(degrees))"
        if canvas != Parameters.mode.defaultValue { text += " \(canvas.rawValue)" }
        if let fill = Parameters.fill.argument(fill) { text += " " + fill }
        return text
    }
}

/// Inverse-maps every destination pixel into the source and samples bilinearly; neighbours outside
/// the source count as `fill`, so the rotated edges are anti-aliased.
final class BilinearRotateRenderer: FilterRenderer {
    let inputSize: FrameSize
    let outputSize: FrameSize
    private let cosine: Double
    private let sine: Double
    private let fill: RGBColor

    init(degrees: Double, fill: RGBColor, inputSize: FrameSize, outputSize: FrameSize) {
        let radians = degrees * .pi / 180
        cosine = cos(radians)
        sine = sin(radians)
        self.fill = fill
        self.inputSize = inputSize
        self.outputSize = outputSize
    }

    func render(_ source: RGBImage, into destination: RGBImage) {
        let c = cosine, s = sine, fill = fill
        let bands = Parallel.bandCount(for: outputSize.height, minimumPerBand: 32, workers: Parallel.workerCount)
        Parallel.forEachBand(of: outputSize.height, bands: bands) { _, rows in
            RotateKernel.rows(rows, source: source, destination: destination, cosine: c, sine: s, fill: fill)
        }
    }
}

enum RotateKernel {
    /// Fixed-point bits of the source coordinates (32.32 in an Int64: no drift along a row).
    static let fractionBits: Int64 = 32

    /// The range of u (clamped to 0..<count) where lo ≤ g0 + u·d < hi.
    @inline(__always)
    static func span(_ g0: Double, _ d: Double, _ lo: Double, _ hi: Double, _ count: Int) -> Range<Int> {
        if d == 0 { return g0 >= lo && g0 < hi ? 0..<count : 0..<0 }
        var a = (lo - g0) / d, b = (hi - g0) / d
        if d < 0 { swap(&a, &b) }
        // u ≥ a and u < b (open at b); integer bounds, clamped.
        let first = max(0, min(count, Int(max(-1e9, min(1e9, a)).rounded(.up))))
        let end = max(first, min(count, Int(max(-1e9, min(1e9, b)).rounded(.up))))
        return first..<end
    }

    static func rows(_ rows: Range<Int>, source: RGBImage, destination: RGBImage,
                     cosine c: Double, sine s: Double, fill: RGBColor) {
        let sw = source.width, sh = source.height
        let outW = destination.width
        let scx = Double(sw - 1) / 2, scy = Double(sh - 1) / 2
        let dcx = Double(outW - 1) / 2, dcy = Double(destination.height - 1) / 2
        let base = UnsafePointer(source.baseAddress)
        let stride = source.bytesPerRow
        let one = Double(Int64(1) << fractionBits)
        let stepX = Int64((c * one).rounded()), stepY = Int64((-s * one).rounded())
        let fillWord = UInt32(fill.r) | UInt32(fill.g) << 8 | UInt32(fill.b) << 16
        // A margin in source pixels that covers the fixed-point rounding of the fast span.
        let margin = 1e-6

        for v in rows {
            let out = destination.row(v)
            let dy = Double(v) - dcy
            // Source position of u = 0 and its change per output pixel (inverse of a clockwise rotation).
            let sx0 = scx - c * dcx + s * dy
            let sy0 = scy + s * dcx + c * dy
            // Fast span: all four neighbours inside (0 ≤ sx < sw − 1, 0 ≤ sy < sh − 1), never the last pixel.
            let fx = span(sx0, c, margin, Double(sw - 1) - margin, outW - 1)
            let fy = span(sy0, -s, margin, Double(sh - 1) - margin, outW - 1)
            // Touched span: at least one neighbour inside (−1 < sx < sw, −1 < sy < sh), widened by one pixel.
            let tx = span(sx0, c, -1 - 1e-3, Double(sw) + 1e-3, outW)
            let ty = span(sy0, -s, -1 - 1e-3, Double(sh) + 1e-3, outW)
            let touchedLow = max(0, max(tx.lowerBound, ty.lowerBound) - 1)
            let touchedHigh = min(outW, min(tx.upperBound, ty.upperBound) + 1)
            guard touchedLow < touchedHigh else {
                fillPixels(out, 0..<outW, fillWord)
                continue
            }
            let touched = touchedLow..<touchedHigh
            let fastLow = min(max(max(fx.lowerBound, fy.lowerBound), touchedLow), touchedHigh)
            let fast = fastLow..<max(fastLow, min(min(fx.upperBound, fy.upperBound), touchedHigh))
            fillPixels(out, 0..<touched.lowerBound, fillWord)
            for u in touched.lowerBound..<fast.lowerBound {
                general(u, out, sx0 + c * Double(u), sy0 - s * Double(u), base, stride, sw, sh, fill)
            }
            if !fast.isEmpty {
                var x = Int64((sx0 * one).rounded()) + Int64(fast.lowerBound) * stepX
                var y = Int64((sy0 * one).rounded()) + Int64(fast.lowerBound) * stepY
                var p = out + 3 * fast.lowerBound
                for _ in fast {
                    let xi = Int(truncatingIfNeeded: x >> fractionBits), yi = Int(truncatingIfNeeded: y >> fractionBits)
                    let wx = UInt32(truncatingIfNeeded: (x >> (fractionBits - 8)) & 0xFF)
                    let wy = UInt32(truncatingIfNeeded: (y >> (fractionBits - 8)) & 0xFF)
                    let q = base + (yi &* stride &+ 3 &* xi)
                    // Word loads read one byte past the pixel: inside the row (x + 1 < sw) or its padding.
                    let p00 = UnsafeRawPointer(q).loadUnaligned(as: UInt32.self)
                    let p01 = UnsafeRawPointer(q + 3).loadUnaligned(as: UInt32.self)
                    let p10 = UnsafeRawPointer(q + stride).loadUnaligned(as: UInt32.self)
                    let p11 = UnsafeRawPointer(q + stride + 3).loadUnaligned(as: UInt32.self)
                    // Weights in 1/256 that sum to exactly 256, so flat areas stay exact.
                    let w11 = (wx &* wy &+ 128) >> 8
                    let w01 = wx &- w11, w10 = wy &- w11
                    let w00 = 256 &- wx &- wy &+ w11
                    // R and B in 16-bit fields of one word, G in another: each sum ≤ 255·256 fits.
                    let mask: UInt32 = 0x00FF_00FF
                    let rb = (p00 & mask) &* w00 &+ (p01 & mask) &* w01 &+ (p10 & mask) &* w10 &+ (p11 & mask) &* w11
                    let g = ((p00 >> 8) & mask) &* w00 &+ ((p01 >> 8) & mask) &* w01 &+ ((p10 >> 8) & mask) &* w10 &+ ((p11 >> 8) & mask) &* w11
                    let word = (((rb &+ 0x0080_0080) >> 8) & mask) | ((g &+ 0x80) & 0xFF00)
                    // Spills one byte into the next pixel, which is written next (never the row's last pixel).
                    UnsafeMutableRawPointer(p).storeBytes(of: word, as: UInt32.self)
                    p += 3
                    x &+= stepX
                    y &+= stepY
                }
            }
            for u in fast.upperBound..<touched.upperBound {
                general(u, out, sx0 + c * Double(u), sy0 - s * Double(u), base, stride, sw, sh, fill)
            }
            fillPixels(out, touched.upperBound..<outW, fillWord)
        }
    }

    @inline(__always)
    static func fillPixels(_ out: UnsafeMutablePointer<UInt8>, _ range: Range<Int>, _ word: UInt32) {
        guard !range.isEmpty else { return }
        var p = out + 3 * range.lowerBound
        for _ in range {
            p[0] = UInt8(truncatingIfNeeded: word)
            p[1] = UInt8(truncatingIfNeeded: word >> 8)
            p[2] = UInt8(truncatingIfNeeded: word >> 16)
            p += 3
        }
    }

    /// One pixel near or across the source's edge: neighbours outside count as `fill`.
    @inline(never)
    static func general(_ u: Int, _ out: UnsafeMutablePointer<UInt8>, _ sx: Double, _ sy: Double,
                        _ base: UnsafePointer<UInt8>, _ stride: Int, _ sw: Int, _ sh: Int, _ fill: RGBColor) {
        let p = out + 3 * u
        let fx0 = sx.rounded(.down), fy0 = sy.rounded(.down)
        guard fx0 >= -1, fy0 >= -1, fx0 < Double(sw), fy0 < Double(sh) else {
            p[0] = fill.r; p[1] = fill.g; p[2] = fill.b
            return
        }
        let fillVector = SIMD4<Float>(Float(fill.r), Float(fill.g), Float(fill.b), 0)
        @inline(__always) func load(_ x: Int, _ y: Int) -> SIMD4<Float> {
            guard x >= 0, y >= 0, x < sw, y < sh else { return fillVector }
            let q = base + y * stride + 3 * x
            return SIMD4<Float>(Float(q[0]), Float(q[1]), Float(q[2]), 0)
        }
        let x0 = Int(fx0), y0 = Int(fy0)
        let fx = Float(sx - fx0), fy = Float(sy - fy0)
        let top = load(x0, y0) * (1 - fx) + load(x0 + 1, y0) * fx
        let bottom = load(x0, y0 + 1) * (1 - fx) + load(x0 + 1, y0 + 1) * fx
        let value = (top * (1 - fy) + bottom * fy) + 0.5
        p[0] = UInt8(min(value[0], 255))
        p[1] = UInt8(min(value[1], 255))
        p[2] = UInt8(min(value[2], 255))
    }
}
