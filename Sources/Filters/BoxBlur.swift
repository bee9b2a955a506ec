/// Box blur: the mean of the (2R+1)×(2R+1) square around each pixel, `power` times; edges mirrored
/// with the edge pixel repeated. ffmpeg's `boxblur=R:P` on every plane, and the same arithmetic:
/// a horizontal pass then a vertical one, each rounding to 8 bits with libavfilter's 16-bit
/// reciprocal, so the result is libavfilter's to the bit. O(1) per pixel whatever the radius.
public struct BoxBlur: Filter, Hashable {
    public enum Parameters {
        public static let radius = NumericParameter<Int>("radius", in: 1...256,
                                                         summary: "half the side of the square, in pixels (at most half the picture's smaller side)")
        public static let power = NumericParameter<Int>("power", in: 1...4, default: 1,
                                                        summary: "how many times it is applied (3 is close to a Gaussian)")
    }

    @available(*, deprecated, renamed: "Parameters.radius.range") public static var radiusRange: ClosedRange<Int> { Parameters.radius.range }
    @available(*, deprecated, renamed: "Parameters.power.range") public static var powerRange: ClosedRange<Int> { Parameters.power.range }

    public var radius: Int
    public var power: Int

    public init(radius: Int, power: Int = Parameters.power.defaultValue!) {
        self.radius = radius
        self.power = power
    }

    public var description: String {
        (["boxblur radius=\(radius)"] + [Parameters.power.argument(power)].compactMap { $0 }).joined(separator: " ")
    }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        try Parameters.radius.check(radius, filter: description)
        try Parameters.power.check(power, filter: description)
        // Mirroring needs the square to fit: like libavfilter, at most half the smaller side.
        guard radius <= min(input.width, input.height) / 2 else {
            throw .invalidGeometry(filter: description, reason: "the radius must be at most half the smaller side (\(min(input.width, input.height) / 2) for \(input.width)x\(input.height))")
        }
        return input
    }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        _ = try outputSize(for: input)
        return BoxBlurRenderer(size: input, channels: 3, window: BoxWindow(radius: radius), power: power)
    }
}

// A box's samples weigh the same and add up to one, so it commutes with Y′CbCr ↔ RGB: the luma
// plane takes the picture's box. A chroma plane is half size, and a box 2R+1 picture samples wide
// is R+½ chroma samples wide: whole samples in the middle and a fractional one at each end. That
// window is exactly the picture's box seen through 4:2:0 (chroma replicated over its 2×2 block,
// boxed, then each block's mean) — [3 4 3]/10 for R = 2, [1 4 1]/6 for R = 1.
extension BoxBlur: PlanarFilter {
    public func acceptsPlanes(of picture: FrameSize) -> Bool {
        (try? outputSize(for: picture)) != nil
    }

    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        guard acceptsPlanes(of: picture) else { return nil }
        let window = role == .luma ? BoxWindow(radius: radius) : BoxWindow(halving: radius)
        return BoxBlurRenderer(size: picture.shifted(by: role.shift), channels: 1, window: window, power: power)
    }
}

/// One axis of a box pass: 2R+1 taps, the two end taps weighing `(scale − deficit) / scale` of
/// the others; results rounded to 8 bits with libavfilter's 16-bit reciprocal of the total weight.
struct BoxWindow: Hashable {
    let radius: Int
    let scale: UInt32
    let deficit: UInt32
    let inverse: UInt32

    /// A plain box (every tap weighs one): libavfilter's boxblur to the bit.
    init(radius: Int) { self.init(radius: radius, scale: 1, deficit: 0) }

    /// The window on a half-size plane that gives the picture's box of `pictureRadius`: R + ½
    /// samples either side, so quarter weights at the ends (¾ for even R, ¼ for odd).
    init(halving pictureRadius: Int) {
        if pictureRadius % 2 == 0 {
            self.init(radius: pictureRadius / 2, scale: 4, deficit: 1)
        } else {
            self.init(radius: (pictureRadius + 1) / 2, scale: 4, deficit: 3)
        }
    }

    private init(radius: Int, scale: UInt32, deficit: UInt32) {
        (self.radius, self.scale, self.deficit) = (radius, scale, deficit)
        let total = scale * UInt32(2 * radius + 1) - 2 * deficit
        inverse = ((1 << 16) + total / 2) / total
    }

    /// The 8-bit mean from the window's plain sum and its two end samples.
    @inline(__always) func mean(sum: UInt32, ends: UInt32) -> UInt8 {
        UInt8(truncatingIfNeeded: ((sum &* scale &- ends &* deficit) &* inverse &+ 32768) >> 16)
    }
}

/// The box blur of an RGB picture (3 channels) or of one plane (1 channel): a horizontal pass then
/// a vertical one, `power` times each, O(1) per sample whatever the radius.
private final class BoxBlurRenderer: FilterRenderer, PlaneRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let channels: Int
    private let window: BoxWindow
    private let power: Int
    /// The horizontal passes' result, then the vertical passes' ping-pong partner.
    private let middle: PlaneBuffer
    private let spare: PlaneBuffer
    /// Per band: a row of mirrored source bytes, and the column sums of the vertical pass.
    private let rowScratch: ScratchBuffer<UInt8>
    private let columnSums: ScratchBuffer<UInt32>
    private let bands: Int

    init(size: FrameSize, channels: Int, window: BoxWindow, power: Int) {
        inputSize = size
        self.channels = channels
        self.window = window
        self.power = power
        let samples = FrameSize(width: channels * size.width, height: size.height)
        middle = PlaneBuffer(size: samples)
        spare = PlaneBuffer(size: samples)
        bands = Parallel.bandCount(for: size.height, minimumPerBand: 16)
        rowScratch = ScratchBuffer(count: bands * channels * (size.width + 2 * window.radius), zero: 0)
        columnSums = ScratchBuffer(count: bands * samples.width, zero: 0)
    }

    func render(_ source: RGBImage, into destination: RGBImage) {
        render(SampleRows(source), into: SampleRows(destination))
    }

    func render(_ source: Plane, into destination: Plane) {
        render(SampleRows(source), into: SampleRows(destination))
    }

    private func render(_ source: SampleRows, into destination: SampleRows) {
        let buffers = [middle, spare].map { SampleRows($0.plane) }
        // Horizontal passes: source → middle (→ spare → middle …), rows in bands.
        var from = source, fromBuffer = -1
        for pass in 0..<power {
            horizontal(from, into: buffers[pass % 2])
            (from, fromBuffer) = (buffers[pass % 2], pass % 2)
        }
        // Vertical passes, the last into the destination.
        for pass in 0..<power {
            let toBuffer = 1 - fromBuffer
            let to = pass == power - 1 ? destination : buffers[toBuffer]
            vertical(from, into: to)
            (from, fromBuffer) = (to, toBuffer)
        }
    }

    /// One horizontal pass: each row mirrored into a padded scratch row (the edge pixel repeated:
    /// x = −i reads x = i − 1), then a running sum per channel.
    private func horizontal(_ source: SampleRows, into destination: SampleRows) {
        let (width, c, window) = (inputSize.width, channels, window)
        let r = window.radius
        let padded = c * (width + 2 * r)
        let scratch = rowScratch
        Parallel.forEachBand(of: inputSize.height, bands: bands) { band, rows in
            let line = scratch.base + band * padded
            for y in rows {
                let s = source.row(y)
                (line + c * r).update(from: s, count: c * width)
                for i in 1...r {
                    (line + c * (r - i)).update(from: s + c * min(i - 1, width - 1), count: c)
                    (line + c * (r + width - 1 + i)).update(from: s + c * max(width - i, 0), count: c)
                }
                let d = destination.row(y)
                if c == 3 {
                    Self.runningBoxRGB(line, count: width, window: window, into: d)
                } else {
                    for channel in 0..<c { Self.runningBox(line + channel, step: c, count: width, window: window, into: d + channel) }
                }
            }
        }
    }

    /// The windowed means of `count` samples `step` apart, from a line padded by the radius each side.
    private static func runningBox(_ line: UnsafeMutablePointer<UInt8>, step: Int, count: Int, window: BoxWindow,
                                   into d: UnsafeMutablePointer<UInt8>) {
        let span = 2 * window.radius, inverse = window.inverse
        var sum: UInt32 = 0
        for k in 0...span { sum &+= UInt32(line[step * k]) }
        var (s, o) = (line, d)
        if window.deficit == 0 {
            for _ in 0..<(count - 1) {
                o[0] = UInt8(truncatingIfNeeded: (sum &* inverse &+ 32768) >> 16)
                sum = sum &+ UInt32(s[step * (span + 1)]) &- UInt32(s[0])
                s += step; o += step
            }
        } else {
            for _ in 0..<(count - 1) {
                let leave = UInt32(s[0])
                o[0] = window.mean(sum: sum, ends: leave &+ UInt32(s[step * span]))
                sum = sum &+ UInt32(s[step * (span + 1)]) &- leave
                s += step; o += step
            }
        }
        o[0] = window.mean(sum: sum, ends: UInt32(s[0]) &+ UInt32(s[step * span]))
    }

    /// `runningBox` for RGB with its three channels in step (a plain box: RGB's window is never halved).
    private static func runningBoxRGB(_ line: UnsafeMutablePointer<UInt8>, count: Int, window: BoxWindow, into d: UnsafeMutablePointer<UInt8>) {
        let span = 2 * window.radius, inverse = window.inverse
        var (a, b, c): (UInt32, UInt32, UInt32) = (0, 0, 0)
        for k in 0...span {
            a &+= UInt32(line[3 * k]); b &+= UInt32(line[3 * k + 1]); c &+= UInt32(line[3 * k + 2])
        }
        var x = 0
        while true {
            d[3 * x] = UInt8(truncatingIfNeeded: (a &* inverse &+ 32768) >> 16)
            d[3 * x + 1] = UInt8(truncatingIfNeeded: (b &* inverse &+ 32768) >> 16)
            d[3 * x + 2] = UInt8(truncatingIfNeeded: (c &* inverse &+ 32768) >> 16)
            if x == count - 1 { break }
            let enter = 3 * (x + span + 1), leave = 3 * x
            a = a &+ UInt32(line[enter]) &- UInt32(line[leave])
            b = b &+ UInt32(line[enter + 1]) &- UInt32(line[leave + 1])
            c = c &+ UInt32(line[enter + 2]) &- UInt32(line[leave + 2])
            x += 1
        }
    }

    /// One vertical pass: per band, column sums of the window, updated a row at a time (vectorised
    /// across the row) as one row enters and one leaves.
    private func vertical(_ source: SampleRows, into destination: SampleRows) {
        let (height, window) = (inputSize.height, window)
        let r = window.radius
        let n = channels * inputSize.width
        let sumsScratch = columnSums
        Parallel.forEachBand(of: height, bands: bands) { band, rows in
            let sums = sumsScratch.base + band * n
            @inline(__always) func mirrored(_ y: Int) -> UnsafeMutablePointer<UInt8> {
                source.row(min(max(y < 0 ? -y - 1 : (y >= height ? 2 * height - 1 - y : y), 0), height - 1))
            }
            sums.update(repeating: 0, count: n)
            for k in (rows.lowerBound - r)...(rows.lowerBound + r) {
                let s = mirrored(k)
                for i in 0..<n { sums[i] &+= UInt32(s[i]) }
            }
            let scale = SIMD8<UInt32>(repeating: window.scale), deficit = SIMD8<UInt32>(repeating: window.deficit)
            let inv = SIMD8<UInt32>(repeating: window.inverse), half = SIMD8<UInt32>(repeating: 32768)
            var y = rows.lowerBound
            while true {
                let d = destination.row(y)
                var i = 0
                if window.deficit == 0 {
                    while i + 8 <= n {
                        let sum = UnsafeRawPointer(sums + i).loadUnaligned(as: SIMD8<UInt32>.self)
                        let value = (sum &* inv &+ half) &>> 16
                        UnsafeMutableRawPointer(d + i).storeBytes(of: lowBytes(value), as: SIMD8<UInt8>.self)
                        i += 8
                    }
                    while i < n {
                        d[i] = window.mean(sum: sums[i], ends: 0)
                        i += 1
                    }
                } else {
                    let top = mirrored(y - r), bottom = mirrored(y + r)
                    while i + 8 <= n {
                        let sum = UnsafeRawPointer(sums + i).loadUnaligned(as: SIMD8<UInt32>.self)
                        let ends = uint32s(UnsafeRawPointer(top + i).loadUnaligned(as: SIMD8<UInt8>.self))
                            &+ uint32s(UnsafeRawPointer(bottom + i).loadUnaligned(as: SIMD8<UInt8>.self))
                        let value = ((sum &* scale &- ends &* deficit) &* inv &+ half) &>> 16
                        UnsafeMutableRawPointer(d + i).storeBytes(of: lowBytes(value), as: SIMD8<UInt8>.self)
                        i += 8
                    }
                    while i < n {
                        d[i] = window.mean(sum: sums[i], ends: UInt32(top[i]) &+ UInt32(bottom[i]))
                        i += 1
                    }
                }
                y += 1
                if y == rows.upperBound { break }
                let enter = mirrored(y + r), leave = mirrored(y - r - 1)
                i = 0
                while i + 16 <= n {
                    let e = uint32s(UnsafeRawPointer(enter + i).loadUnaligned(as: SIMD16<UInt8>.self))
                    let l = uint32s(UnsafeRawPointer(leave + i).loadUnaligned(as: SIMD16<UInt8>.self))
                    let p = UnsafeMutableRawPointer(sums + i)
                    p.storeBytes(of: p.loadUnaligned(as: SIMD16<UInt32>.self) &+ e &- l, as: SIMD16<UInt32>.self)
                    i += 16
                }
                while i < n {
                    sums[i] = sums[i] &+ UInt32(enter[i]) &- UInt32(leave[i])
                    i += 1
                }
            }
        }
    }
}

