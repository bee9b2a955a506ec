/// Box blur: the mean of the (2R+1)×(2R+1) square around each pixel, `power` times; edges mirrored
/// with the edge pixel repeated. ffmpeg's `boxblur=R:P` on every plane, and the same arithmetic:
/// a horizontal pass then a vertical one, each rounding to 8 bits with libavfilter's 16-bit
/// reciprocal, so the result is libavfilter's to the bit. O(1) per pixel whatever the radius.
public struct BoxBlur: Filter, Hashable {
    public static let radiusRange = 1...256
    public static let powerRange = 1...4

    public var radius: Int
    public var power: Int

    public init(radius: Int, power: Int = 1) {
        self.radius = radius
        self.power = power
    }

    public var description: String { power == 1 ? "boxblur radius=\(radius)" : "boxblur radius=\(radius) power=\(power)" }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        // Mirroring needs the square to fit: like libavfilter, at most half the smaller side.
        guard radius <= min(input.width, input.height) / 2 else {
            throw .invalidGeometry(filter: description, reason: "the radius must be at most half the smaller side (\(min(input.width, input.height) / 2) for \(input.width)x\(input.height))")
        }
        return input
    }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        guard Self.radiusRange.contains(radius), Self.powerRange.contains(power) else {
            throw .invalidGeometry(filter: description, reason: "radius must be \(Self.radiusRange.lowerBound)…\(Self.radiusRange.upperBound), power \(Self.powerRange.lowerBound)…\(Self.powerRange.upperBound)")
        }
        _ = try outputSize(for: input)
        return BoxBlurRenderer(size: input, radius: radius, power: power)
    }
}

private final class BoxBlurRenderer: FilterRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let radius: Int
    private let power: Int
    /// libavfilter's fixed-point reciprocal of the window length.
    private let inverse: UInt32
    /// The horizontal passes' result, then the vertical passes' ping-pong partner.
    private let middle: RGBImage
    private let spare: RGBImage
    /// Per band: a row of mirrored source bytes, and the column sums of the vertical pass.
    private let rowScratch: ScratchBuffer<UInt8>
    private let columnSums: ScratchBuffer<UInt32>
    private let bands: Int

    init(size: FrameSize, radius: Int, power: Int) {
        inputSize = size
        self.radius = radius
        self.power = power
        let length = UInt32(2 * radius + 1)
        inverse = ((1 << 16) + length / 2) / length
        middle = RGBImage(width: size.width, height: size.height)
        spare = RGBImage(width: size.width, height: size.height)
        bands = Parallel.bandCount(for: size.height, minimumPerBand: 16)
        rowScratch = ScratchBuffer(count: bands * 3 * (size.width + 2 * radius), zero: 0)
        columnSums = ScratchBuffer(count: bands * 3 * size.width, zero: 0)
    }

    func render(_ source: RGBImage, into destination: RGBImage) {
        // Horizontal passes: source → middle (→ spare → middle …), rows in bands.
        var from = source
        for pass in 0..<power {
            let to = pass % 2 == 0 ? middle : spare
            horizontal(from, into: to)
            from = to
        }
        // Vertical passes, the last into the destination.
        for pass in 0..<power {
            let to = pass == power - 1 ? destination : (from === middle ? spare : middle)
            vertical(from, into: to)
            from = to
        }
    }

    /// One horizontal pass: each row mirrored into a padded scratch row, then a running sum per channel.
    private func horizontal(_ source: RGBImage, into destination: RGBImage) {
        let (width, r, inverse) = (inputSize.width, radius, inverse)
        let padded = 3 * (width + 2 * r)
        let scratch = rowScratch
        Parallel.forEachBand(of: inputSize.height, bands: bands) { band, rows in
            let line = scratch.base + band * padded
            for y in rows {
                let s = source.row(y)
                // Mirror with the edge repeated: x = -i reads x = i - 1; x = w - 1 + i reads x = w - i.
                (line + 3 * r).update(from: s, count: 3 * width)
                for i in 1...r {
                    let left = 3 * (r - i), from = 3 * (i - 1)
                    line[left] = s[from]; line[left + 1] = s[from + 1]; line[left + 2] = s[from + 2]
                    let right = 3 * (r + width - 1 + i), mirror = 3 * (width - i)
                    line[right] = s[mirror]; line[right + 1] = s[mirror + 1]; line[right + 2] = s[mirror + 2]
                }
                var (a, b, c): (UInt32, UInt32, UInt32) = (0, 0, 0)
                for k in 0..<(2 * r + 1) {
                    a &+= UInt32(line[3 * k]); b &+= UInt32(line[3 * k + 1]); c &+= UInt32(line[3 * k + 2])
                }
                let d = destination.row(y)
                var x = 0
                while true {
                    d[3 * x] = UInt8(truncatingIfNeeded: (a &* inverse &+ 32768) >> 16)
                    d[3 * x + 1] = UInt8(truncatingIfNeeded: (b &* inverse &+ 32768) >> 16)
                    d[3 * x + 2] = UInt8(truncatingIfNeeded: (c &* inverse &+ 32768) >> 16)
                    if x == width - 1 { break }
                    let enter = 3 * (x + 2 * r + 1), leave = 3 * x
                    a = a &+ UInt32(line[enter]) &- UInt32(line[leave])
                    b = b &+ UInt32(line[enter + 1]) &- UInt32(line[leave + 1])
                    c = c &+ UInt32(line[enter + 2]) &- UInt32(line[leave + 2])
                    x += 1
                }
            }
        }
    }

    /// One vertical pass: per band, column sums of the window, updated a row at a time (vectorised
    /// across the row) as one row enters and one leaves.
    private func vertical(_ source: RGBImage, into destination: RGBImage) {
        let (width, height, r, inverse) = (inputSize.width, inputSize.height, radius, inverse)
        let n = 3 * width
        let sumsScratch = columnSums
        Parallel.forEachBand(of: height, bands: bands) { band, rows in
            let sums = sumsScratch.base + band * n
            @inline(__always) func mirrored(_ y: Int) -> UnsafeMutablePointer<UInt8> {
                source.row(y < 0 ? -y - 1 : (y >= height ? 2 * height - 1 - y : y))
            }
            sums.update(repeating: 0, count: n)
            for k in (rows.lowerBound - r)...(rows.lowerBound + r) {
                let s = mirrored(k)
                for i in 0..<n { sums[i] &+= UInt32(s[i]) }
            }
            var y = rows.lowerBound
            while true {
                let d = destination.row(y)
                var i = 0
                let inv = SIMD8<UInt32>(repeating: inverse), half = SIMD8<UInt32>(repeating: 32768)
                while i + 8 <= n {
                    let sum = UnsafeRawPointer(sums + i).loadUnaligned(as: SIMD8<UInt32>.self)
                    let value = (sum &* inv &+ half) &>> 16
                    UnsafeMutableRawPointer(d + i).storeBytes(of: SIMD8<UInt8>(truncatingIfNeeded: value), as: SIMD8<UInt8>.self)
                    i += 8
                }
                while i < n {
                    d[i] = UInt8(truncatingIfNeeded: (sums[i] &* inverse &+ 32768) >> 16)
                    i += 1
                }
                y += 1
                if y == rows.upperBound { break }
                let enter = mirrored(y + r), leave = mirrored(y - r - 1)
                i = 0
                while i + 16 <= n {
                    let e = SIMD16<UInt32>(truncatingIfNeeded: UnsafeRawPointer(enter + i).loadUnaligned(as: SIMD16<UInt8>.self))
                    let l = SIMD16<UInt32>(truncatingIfNeeded: UnsafeRawPointer(leave + i).loadUnaligned(as: SIMD16<UInt8>.self))
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
