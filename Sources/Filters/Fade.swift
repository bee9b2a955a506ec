/// Fades from a colour into the picture (`in=START,DURATION`) and/or from the picture out to it
/// (`out=START,DURATION`), by output time: ffmpeg's `fade` with `st=`/`d=` on rgb24, to the bit.
///
/// libavfilter's arithmetic, kept so the two agree exactly: the time in whole microseconds, the
/// factor f = (t − start) · 65535 / duration in integers, clipped to 0…65535 (65535 − f fading
/// out), and each sample c + (p − c) · f / 65536 rounded.
public struct Fade: Filter, Hashable, TimeVaryingFilter {
    public struct Window: Hashable, Sendable, CustomStringConvertible {
        public var start: Double
        public var duration: Double

        public init(start: Double, duration: Double) {
            (self.start, self.duration) = (start, duration)
        }

        public var description: String { "\(formatNumber(start)),\(formatNumber(duration))" }

        static func parse(_ text: String) -> Window? {
            let parts = text.split(separator: ",", omittingEmptySubsequences: false)
            guard parts.count == 2, let start = Double(parts[0]), let duration = Double(parts[1]),
                  start.isFinite, duration.isFinite, start >= 0, duration > 0, start + duration <= 1e9 else { return nil }
            return Window(start: start, duration: duration)
        }

        /// libavfilter's factor at `seconds`, 0…65535, for a fade in.
        func factor(at seconds: Double) -> Int {
            let t = Int64((seconds * 1_000_000).rounded()), s = Int64((start * 1_000_000).rounded())
            let d = max(1, Int64((duration * 1_000_000).rounded()))
            guard t >= s else { return 0 }
            return Int(min(65535, (t - s) * 65535 / d))
        }
    }

    public enum Parameters {
        public static let color = ValueParameter<RGBColor>.color("color", default: .black, summary: "the colour faded from and to")
    }

    public var fadeIn: Window?
    public var fadeOut: Window?
    public var color: RGBColor

    public init(in fadeIn: Window? = nil, out fadeOut: Window? = nil, color: RGBColor = Parameters.color.defaultValue) {
        (self.fadeIn, self.fadeOut, self.color) = (fadeIn, fadeOut, color)
    }

    public var isTimeDependent: Bool { true }

    public var description: String {
        var parts = ["fade"]
        if let fadeIn { parts.append("in=\(fadeIn)") }
        if let fadeOut { parts.append("out=\(fadeOut)") }
        if let color = Parameters.color.argument(color) { parts.append(color) }
        return parts.joined(separator: " ")
    }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize { input }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        FadeRenderer(fade: self, size: input)
    }

    /// The factors (16-bit: 65535 shows the picture) the fades give at `seconds`, in order.
    func factors(at seconds: Double) -> [Int] {
        var out: [Int] = []
        if let fadeIn { out.append(fadeIn.factor(at: seconds)) }
        if let fadeOut { out.append(65535 - fadeOut.factor(at: seconds)) }
        return out
    }
}

/// A filter whose picture depends on the output time even with every parameter fixed.
public protocol TimeVaryingFilter: Filter {
    var isTimeDependent: Bool { get }
}

private final class FadeRenderer: TimedFilterRenderer, InPlaceFilterRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let fade: Fade
    private let bands: Int

    init(fade: Fade, size: FrameSize) {
        self.fade = fade
        inputSize = size
        bands = Parallel.bandCount(for: size.height, minimumPerBand: 32)
    }

    func render(_ source: RGBImage, into destination: RGBImage) { render(source, into: destination, at: .zero) }

    func render(_ source: RGBImage, into destination: RGBImage, at time: FrameTime) {
        destination.copyPixels(from: source)
        renderInPlace(destination, at: time)
    }

    func renderInPlace(_ image: RGBImage, at time: FrameTime) {
        for factor in fade.factors(at: time.seconds) where factor < 65535 {
            apply(factor: Int32(factor), to: image)
        }
    }

    private func apply(factor f: Int32, to image: RGBImage) {
        let c = fade.color
        let base = (Int32(c.r) << 16 | 0x8000, Int32(c.g) << 16 | 0x8000, Int32(c.b) << 16 | 0x8000)
        let colour = (Int32(c.r), Int32(c.g), Int32(c.b))
        let width = inputSize.width
        Parallel.forEachBand(of: inputSize.height, bands: bands) { _, rows in
            for y in rows {
                let p = image.row(y)
                // (c << 16) + (p − c)·f + ½, over 65536: never negative, never above 255 · 65536.
                for x in 0..<width {
                    let i = 3 * x
                    p[i] = UInt8(truncatingIfNeeded: (base.0 &+ (Int32(p[i]) &- colour.0) &* f) >> 16)
                    p[i + 1] = UInt8(truncatingIfNeeded: (base.1 &+ (Int32(p[i + 1]) &- colour.1) &* f) >> 16)
                    p[i + 2] = UInt8(truncatingIfNeeded: (base.2 &+ (Int32(p[i + 2]) &- colour.2) &* f) >> 16)
                }
            }
        }
    }
}

// A fade is c + (p − c)·f per sample: a weighted sum with weights adding up to one, so on a plane
// it is the same with the colour's sample for c. Drawn in place, at each picture's time.
extension Fade: PlanarFilter {
    public var drawsInPlace: Bool { true }

    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        let samples = color.samples(of: self.color)
        let value = role == .luma ? samples.y : role == .cb ? samples.cb : samples.cr
        return FadePlaneRenderer(fade: self, size: picture.shifted(by: role.shift), value: value)
    }
}

private final class FadePlaneRenderer: InPlacePlaneRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let fade: Fade
    private let value: Int32
    private let bands: Int

    init(fade: Fade, size: FrameSize, value: UInt8) {
        (self.fade, inputSize, self.value) = (fade, size, Int32(value))
        bands = Parallel.bandCount(for: size.height, minimumPerBand: 64)
    }

    func renderInPlace(_ plane: Plane, at time: FrameTime) {
        let (value, width) = (value, inputSize.width)
        let base = value << 16 | 0x8000
        for factor in fade.factors(at: time.seconds) where factor < 65535 {
            let f = Int32(factor)
            Parallel.forEachBand(of: inputSize.height, bands: bands) { _, rows in
                for y in rows {
                    let p = plane.row(y)
                    for x in 0..<width { p[x] = UInt8(truncatingIfNeeded: (base &+ (Int32(p[x]) &- value) &* f) >> 16) }
                }
            }
        }
    }
}
