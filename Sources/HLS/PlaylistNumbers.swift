/// Numbers as a playlist writes them, read with bounds so that no arithmetic on them can trap.
///
/// A playlist is untrusted input: an origin that writes `EXT-X-DISCONTINUITY-SEQUENCE:9223372036854775807`
/// must get a named error, not a process that traps on the first `+ 1`. RFC 8216 §4.2 lets a
/// decimal-integer run to 2^64 − 1; livefilter reads up to 2^53 − 1 (what a JavaScript player such as
/// hls.js counts to exactly, and far beyond any real sequence number or byte offset), so the sum of
/// any two values read here, or a value plus any count of lines, still fits in an `Int`. Durations
/// are finite, not negative and at most `largestSeconds`, so a sum over every segment of any playlist
/// that fits in memory, in milliseconds, still fits in an `Int64`.
public enum PlaylistNumber {
    /// The largest decimal-integer read: 2^53 − 1.
    public static let largestInteger = 9_007_199_254_740_991
    /// The longest duration read (EXTINF, EXT-X-PART DURATION, PART-TARGET, hold-backs): about 11.6 days.
    public static let largestSeconds = 1_000_000.0
    /// The largest width or height of a RESOLUTION attribute: their product fits in an `Int`.
    public static let largestDimension = 65_535

    /// What a decimal-integer's text holds.
    public enum Reading: Equatable, Sendable {
        case value(Int)
        /// Not 1–20 ASCII digits (a sign, a space, a fraction, nothing).
        case notDecimalInteger
        /// Digits, but above `largestInteger` (RFC 8216 allows up to 2^64 − 1).
        case tooLarge
    }

    /// Reads RFC 8216's decimal-integer: ASCII digits only, no sign, no spaces.
    public static func decimalInteger(_ text: some StringProtocol) -> Reading {
        let digits = text.utf8
        guard !digits.isEmpty, digits.count <= 20, digits.allSatisfy({ (48...57).contains($0) }) else { return .notDecimalInteger }
        var value = 0
        for b in digits {
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(Int(b - 48))
            if o1 || o2 || sum > largestInteger { return .tooLarge }
            value = sum
        }
        return .value(value)
    }

    /// The value, or nil for anything `decimalInteger` does not read as a bounded value.
    public static func integer(_ text: (some StringProtocol)?) -> Int? {
        guard let text, case let .value(n) = decimalInteger(text) else { return nil }
        return n
    }

    /// A decimal-integer a tag needs: the value, or an error that names the tag and the bound.
    static func required(_ text: some StringProtocol, _ what: String, line: Int) throws(PlaylistParseError) -> Int {
        switch decimalInteger(text) {
        case let .value(n): return n
        case .notDecimalInteger: throw PlaylistParseError(line: line, message: "\(what) '\(text.prefix(40))' is not a decimal-integer")
        case .tooLarge:
            throw PlaylistParseError(line: line, message: "\(what) \(text.prefix(40)) is larger than livefilter reads (at most 2^53 − 1 = \(largestInteger))",
                                     isOutOfBounds: true)
        }
    }

    /// A duration in seconds (decimal-floating-point): finite, not negative, at most `largestSeconds`.
    public static func seconds(_ text: (some StringProtocol)?) -> Double? {
        guard let text, let value = Double(String(text)), value.isFinite, value >= 0, value <= largestSeconds else { return nil }
        return value
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
