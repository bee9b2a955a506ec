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

    public var degrees: Double
    public var canvas: Canvas
    public var fill: RGBColor

    public init(degrees: Double, canvas: Canvas = .expand, fill: RGBColor = .black) {
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
        if let exact = d4Transform(for: input) { return D4Renderer(transform: exact, inputSize: input) }
        return BilinearRotateRenderer(degrees: degrees, fill: fill, inputSize: input,
                                      outputSize: try outputSize(for: input))
    }

    public var description: String {
        var text = "rotate \(formatNumber(degrees))"
        if canvas != .expand { text += " \(canvas.rawValue)" }
        if fill != .black { text += " fill=\(fill)" }
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
        let bands = Parallel.bandCount(for: outputSize.height, minimumPerBand: 32)
        Parallel.forEachBand(of: outputSize.height, bands: bands) { _, rows in
            RotateKernel.rows(rows, source: source, destination: destination, cosine: c, sine: s, fill: fill)
        }
    }
}

enum RotateKernel {
    static func rows(_ rows: Range<Int>, source: RGBImage, destination: RGBImage,
                     cosine c: Double, sine s: Double, fill: RGBColor) {
        let sw = source.width, sh = source.height
        let scx = Double(sw - 1) / 2, scy = Double(sh - 1) / 2
        let dcx = Double(destination.width - 1) / 2, dcy = Double(destination.height - 1) / 2
        let fillVector = SIMD4<Float>(Float(fill.r), Float(fill.g), Float(fill.b), 0)
        let base = UnsafePointer(source.baseAddress)
        let stride = source.bytesPerRow

        @inline(__always) func load(_ x: Int, _ y: Int) -> SIMD4<Float> {
            guard x >= 0, y >= 0, x < sw, y < sh else { return fillVector }
            let p = base + y * stride + 3 * x
            return SIMD4<Float>(Float(p[0]), Float(p[1]), Float(p[2]), 0)
        }

        for v in rows {
            let out = destination.row(v)
            let dy = Double(v) - dcy
            for u in 0..<destination.width {
                let dx = Double(u) - dcx
                // Inverse of a clockwise (y-down) rotation.
                let sx = scx + c * dx + s * dy
                let sy = scy - s * dx + c * dy
                let fx0 = sx.rounded(.down), fy0 = sy.rounded(.down)
                let p = out + 3 * u
                guard fx0 >= -1, fy0 >= -1, fx0 < Double(sw), fy0 < Double(sh) else {
                    p[0] = fill.r; p[1] = fill.g; p[2] = fill.b
                    continue
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
    }
}
