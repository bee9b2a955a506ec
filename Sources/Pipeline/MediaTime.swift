/// An exact point in time: `value` units of `1/timescale`... expressed as value × num / den seconds.
public struct MediaTime: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var value: Int64
    /// Seconds per unit, as a ratio.
    public var numerator: Int64
    public var denominator: Int64

    public init(value: Int64, numerator: Int64, denominator: Int64) {
        precondition(numerator > 0 && denominator > 0, "MediaTime needs a positive time base")
        self.value = value
        self.numerator = numerator
        self.denominator = denominator
    }

    public static let zero = MediaTime(value: 0, numerator: 1, denominator: 1)

    public var seconds: Double { Double(value) * Double(numerator) / Double(denominator) }
    public var description: String { String(format: "%.6fs", seconds) }

    /// Exact comparison by cross-multiplying in 128 bits.
    public static func < (a: MediaTime, b: MediaTime) -> Bool {
        compare(a, b) < 0
    }

    public static func == (a: MediaTime, b: MediaTime) -> Bool {
        compare(a, b) == 0
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(seconds) }

    private static func compare(_ a: MediaTime, _ b: MediaTime) -> Int {
        // a.value * a.num / a.den  vs  b.value * b.num / b.den
        let l = wide(a.value, a.numerator * b.denominator)
        let r = wide(b.value, b.numerator * a.denominator)
        return l < r ? -1 : (l == r ? 0 : 1)
    }

    private static func wide(_ x: Int64, _ y: Int64) -> (high: Int64, low: UInt64) {
        x.multipliedFullWidth(by: y)
    }
}

private func < (a: (high: Int64, low: UInt64), b: (high: Int64, low: UInt64)) -> Bool {
    a.high != b.high ? a.high < b.high : a.low < b.low
}
private func == (a: (high: Int64, low: UInt64), b: (high: Int64, low: UInt64)) -> Bool {
    a.high == b.high && a.low == b.low
}
