/// Unsharp mask: each channel moves away from its blur by `amount` (negative: towards it, a blur).
/// The blur is libavfilter `unsharp`'s: a binomial (Pascal's row) kernel of side 2R+1, edges
/// clamped, summed exactly in integers; then `src + ((src - blur) * amount) >> 16` with amount in
/// 16.16 fixed point, clipped. So each channel is what `unsharp=lx=2R+1:ly=2R+1:la=A` gives a
/// grey plane, to the bit.
public struct Sharpen: Filter, Hashable {
    public enum Parameters {
        public static let amount = NumericParameter<Double>("amount", in: -2...5, default: 1,
                                                            summary: "strength: 0 leaves the picture, 1 doubles its detail, negative blurs")
        /// unsharp allows sides 3…23; beyond 13 its 32-bit sums overflow, so radii up to 6 here.
        public static let radius = NumericParameter<Int>("radius", in: 1...6, default: 2,
                                                         summary: "the blur's half side in pixels (unsharp's lx = ly = 2R+1)")
    }

    @available(*, deprecated, renamed: "Parameters.amount.range") public static var amountRange: ClosedRange<Double> { Parameters.amount.range }
    @available(*, deprecated, renamed: "Parameters.radius.range") public static var radiusRange: ClosedRange<Int> { Parameters.radius.range }

    public var amount: Double
    public var radius: Int

    public init(amount: Double = Parameters.amount.defaultValue!, radius: Int = Parameters.radius.defaultValue!) {
        self.amount = amount
        self.radius = radius
    }

    public var description: String { "sharpen amount=\(formatNumber(amount)) radius=\(radius)" }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        try Parameters.amount.check(amount, filter: description)
        try Parameters.radius.check(radius, filter: description)
        return input
    }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        SharpenRenderer(size: try outputSize(for: input), amount: amount, radius: radius)
    }
}

private final class SharpenRenderer: FilterRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let radius: Int
    /// Pascal's row 2R: the kernel, summing to 2^(2R) per axis.
    private let weights: [UInt32]
    private let amount: Int32
    private let bits: UInt32
    private let bands: Int
    /// Per band: the vertical sums of a row, padded by R pixels each side (edges clamped); then
    /// per band the row's full sums.
    private let scratch: ScratchBuffer<UInt32>
    private let padded: Int

    init(size: FrameSize, amount: Double, radius: Int) {
        inputSize = size
        self.radius = radius
        var row: [UInt32] = [1]
        for _ in 0..<(2 * radius) { row = zip(row + [0], [0] + row).map { $0 + $1 } }
        weights = row
        self.amount = Int32((amount * 65536).rounded(.towardZero))
        bits = UInt32(4 * radius)
        bands = Parallel.bandCount(for: size.height, minimumPerBand: 16)
        padded = 3 * (size.width + 2 * radius)
        // Per band: the padded vertical sums, then (after all bands' rows) the full sums.
        scratch = ScratchBuffer(count: bands * padded + bands * 3 * size.width, zero: 0)
    }

    func render(_ source: RGBImage, into destination: RGBImage) {
        let (width, height, r) = (inputSize.width, inputSize.height, radius)
        let (weights, amount, bits, padded, scratch, bands) = (weights, amount, bits, padded, scratch, bands)
        let n = 3 * width
        let half = UInt32(1) << (bits - 1)
        // Plain loops, k outside and the row inside: LLVM vectorises each (8 or 16 lanes); the
        // generic SIMD operators on integer vectors compiled lane by lane here (110 ms a frame).
        Parallel.forEachBand(of: height, bands: bands) { band, rows in
            let vertical = scratch.base + band * padded
            let line = vertical + 3 * r
            let total = scratch.base + bands * padded + band * n
            for y in rows {
                // Vertical: the weighted sum of rows y-R…y+R (clamped).
                line.update(repeating: 0, count: n)
                for k in 0...(2 * r) {
                    let s = source.row(min(max(y + k - r, 0), height - 1))
                    let w = weights[k]
                    for i in 0..<n { line[i] &+= UInt32(s[i]) &* w }
                }
                // Clamp the row's ends outwards, per channel.
                for p in 1...r {
                    for c in 0..<3 {
                        line[-3 * p + c] = line[c]
                        line[n - 3 + 3 * p + c] = line[n - 3 + c]
                    }
                }
                // Horizontal: the same kernel across neighbours of the same channel (3 apart).
                total.update(repeating: 0, count: n)
                for k in 0...(2 * r) {
                    let from = line + 3 * (k - r)
                    let w = weights[k]
                    for i in 0..<n { total[i] &+= from[i] &* w }
                }
                // The unsharp step on the source value, clipped.
                let s = source.row(y), d = destination.row(y)
                for i in 0..<n {
                    let blur = Int32(truncatingIfNeeded: (total[i] &+ half) >> bits), src = Int32(s[i])
                    d[i] = UInt8(truncatingIfNeeded: min(255, max(0, src &+ (((src &- blur) &* amount) >> 16))))
                }
            }
        }
    }
}
