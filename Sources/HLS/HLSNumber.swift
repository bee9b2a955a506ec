/// Locale-free number formatting for playlists.
public enum HLSNumber {
    /// `value` with exactly `places` decimals, rounded half away from zero ("2.002", "4.000").
    public static func decimal(_ value: Double, places: Int) -> String {
        precondition(places >= 0 && places <= 9, "decimal places out of range")
        guard value.isFinite else { return "0" }
        var scale: Int64 = 1
        for _ in 0..<places { scale *= 10 }
        let magnitude = (abs(value) * Double(scale)).rounded()
        // Past 2^63 (a fuzzed duration of 1e300) a Double has no fraction left to write.
        guard magnitude < 0x1p63 else { return shortest(value.rounded()) + (places > 0 ? "." + String(repeating: "0", count: places) : "") }
        let scaled = Int64(magnitude)
        let sign = value < 0 && scaled != 0 ? "-" : ""
        let whole = scaled / scale
        guard places > 0 else { return "\(sign)\(whole)" }
        var fraction = String(scaled % scale)
        fraction = String(repeating: "0", count: places - fraction.count) + fraction
        return "\(sign)\(whole).\(fraction)"
    }

    /// The shortest decimal text that reads back as `value` ("4.00008", "0.33334", "6"), never in
    /// exponent form (RFC 8216 §4.2 has none): what keeps a parsed number exact through a render.
    public static func shortest(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        if isIntegral(value), abs(value) < 1e15 { return String(Int64(value)) }
        let text = "\(value)"  // Swift prints the shortest round-trip form, with an exponent at the extremes
        guard let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }), let exponent = Int(text[text.index(after: e)...]) else {
            return text
        }
        var mantissa = String(text[..<e])
        let negative = mantissa.hasPrefix("-")
        if negative { mantissa.removeFirst() }
        let point = mantissa.firstIndex(of: ".").map { mantissa.distance(from: mantissa.startIndex, to: $0) } ?? mantissa.count
        var digits = mantissa.filter(\.isASCIIDigit)
        var position = point + exponent  // where the decimal point goes in `digits`
        if position <= 0 {
            digits = String(repeating: "0", count: 1 - position) + digits
            position = 1
        } else if position > digits.count {
            digits += String(repeating: "0", count: position - digits.count)
        }
        var whole = String(digits.prefix(position)), fraction = String(digits.dropFirst(position))
        while fraction.hasSuffix("0") { fraction.removeLast() }
        while whole.count > 1, whole.hasPrefix("0") { whole.removeFirst() }
        return (negative ? "-" : "") + whole + (fraction.isEmpty ? "" : "." + fraction)
    }

    static func isIntegral(_ value: Double) -> Bool { value.rounded() == value }
}
