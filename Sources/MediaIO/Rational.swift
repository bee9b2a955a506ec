import CFFmpeg

/// An exact ratio such as a frame rate (30000/1001) or a time base (1/90000).
public struct Rational: Hashable, Sendable, CustomStringConvertible {
    public var numerator: Int
    public var denominator: Int

    public init(_ numerator: Int, _ denominator: Int) {
        precondition(denominator != 0, "Rational needs a non-zero denominator")
        let g = Self.gcd(abs(numerator), abs(denominator))
        let sign = denominator < 0 ? -1 : 1
        self.numerator = g == 0 ? 0 : sign * numerator / g
        self.denominator = g == 0 ? 1 : sign * denominator / g
    }

    /// Parses "30", "29.97" or "30000/1001".
    public init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        if parts.count == 2 {
            guard let n = Int(parts[0]), let d = Int(parts[1]), d != 0 else { return nil }
            self.init(n, d)
        } else if let n = Int(text) {
            self.init(n, 1)
        } else if let v = Double(text), v.isFinite {
            // Decimal rates such as 29.97: keep three decimals exactly.
            self.init(Int((v * 1000).rounded()), 1000)
        } else {
            return nil
        }
    }

    public var doubleValue: Double { Double(numerator) / Double(denominator) }
    public var inverse: Rational { Rational(denominator, numerator) }
    public var isPositive: Bool { numerator > 0 && denominator > 0 }
    public var description: String { denominator == 1 ? "\(numerator)" : "\(numerator)/\(denominator)" }

    var av: AVRational { AVRational(num: Int32(clamping: numerator), den: Int32(clamping: denominator)) }
    init(_ av: AVRational) { self.init(Int(av.num), av.den == 0 ? 1 : Int(av.den)) }

    private static func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }
}

/// Rescales a timestamp between time bases with rounding to nearest (av_rescale_q).
func rescale(_ value: Int64, from: AVRational, to: AVRational) -> Int64 {
    av_rescale_q(value, from, to)
}
