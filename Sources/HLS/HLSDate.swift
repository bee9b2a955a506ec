import Foundation

/// EXT-X-PROGRAM-DATE-TIME values: ISO 8601 with milliseconds and a zone.
public enum HLSDate {
    /// `2024-05-01T12:00:00.250Z`: UTC, to the nearest millisecond, in the proleptic Gregorian
    /// calendar `parse` reads (ISO8601DateFormatter, used before, wrote Julian dates before 1582, so
    /// a year-24 date moved two days at each render; the fuzzer's find). Years outside 0…9999,
    /// which `parse` does not read, get a sign and more digits.
    public static func format(_ date: Date) -> String {
        let ms = (date.timeIntervalSince1970 * 1000).rounded()
        let total = ms.isNaN ? 0 : Int64(min(max(ms, -1e17), 1e17))  // ±3 million years: no Int overflow below
        let day = Int(total >= 0 ? total / 86_400_000 : (total - 86_399_999) / 86_400_000)
        let inDay = Int(total - Int64(day) * 86_400_000)
        let (year, month, dayOfMonth) = civil(daysFromEpoch: day)
        func pad(_ n: Int, _ width: Int) -> String {
            let digits = String(abs(n))
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let yearText = (0...9999).contains(year) ? pad(year, 4) : (year < 0 ? "-" : "+") + pad(year, 6)
        return "\(yearText)-\(pad(month, 2))-\(pad(dayOfMonth, 2))T\(pad(inDay / 3_600_000, 2)):\(pad(inDay / 60000 % 60, 2)):"
            + "\(pad(inDay / 1000 % 60, 2)).\(pad(inDay % 1000, 3))Z"
    }

    /// Parses an ISO 8601 date-time with a zone: `YYYY-MM-DDThh:mm:ss`, any number of fractional
    /// digits, then `Z`, `±hh:mm` or `±hhmm`; nil for anything else. Read here, not by
    /// `ISO8601DateFormatter`: ICU, under it, died on a divide by zero reading a fraction of 40
    /// digits (a playlist the fuzzer wrote), and a playlist is untrusted input.
    public static func parse(_ text: some StringProtocol) -> Date? {
        var bytes = Array(text.utf8)[...]
        func number(_ digits: Int) -> Int? {
            guard bytes.count >= digits else { return nil }
            var value = 0
            for _ in 0..<digits {
                let b = bytes.removeFirst()
                guard (48...57).contains(b) else { return nil }
                value = value * 10 + Int(b - 48)
            }
            return value
        }
        func take(_ characters: String) -> Bool {
            guard let b = bytes.first, characters.utf8.contains(b) else { return false }
            bytes.removeFirst()
            return true
        }
        guard let year = number(4), take("-"), let month = number(2), take("-"), let day = number(2), take("Tt"),
              let hour = number(2), take(":"), let minute = number(2), take(":"), let second = number(2),
              (1...12).contains(month), (1...daysIn(month, of: year)).contains(day),
              hour < 24, minute < 60, second <= 60 else { return nil }
        var fraction = 0.0
        if take(".") {
            var scale = 0.1, digits = 0
            while let b = bytes.first, (48...57).contains(b) {
                fraction += Double(b - 48) * scale
                scale /= 10
                digits += 1
                bytes.removeFirst()
            }
            guard digits > 0 else { return nil }
        }
        var offset = 0
        if !take("Zz") {
            guard let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") else { return nil }
            bytes.removeFirst()
            guard let hours = number(2) else { return nil }
            _ = take(":")
            guard let minutes = number(2), hours < 24, minutes < 60 else { return nil }
            offset = (hours * 60 + minutes) * 60 * (sign == UInt8(ascii: "-") ? -1 : 1)
        }
        guard bytes.isEmpty else { return nil }
        let days = daysFromEpoch(year: year, month: month, day: day)
        let seconds = ((days * 24 + hour) * 60 + minute) * 60 + second - offset
        // A zone offset or a fraction that rounds up can leave years 0…9999: `format` could not write
        // such a date in a form this reads, so it is not read either.
        let ms = ((Double(seconds) + fraction) * 1000).rounded()
        guard ms >= Double(daysFromEpoch(year: 0, month: 1, day: 1)) * 86_400_000,
              ms < Double(daysFromEpoch(year: 10000, month: 1, day: 1)) * 86_400_000 else { return nil }
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// Year, month and day of the day `days` from 1970-01-01 (proleptic Gregorian; H. Hinnant's
    /// civil-from-days, the inverse of `daysFromEpoch`).
    static func civil(daysFromEpoch days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Days in `month` (1…12) of `year` (Gregorian).
    static func daysIn(_ month: Int, of year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to the date (proleptic Gregorian; H. Hinnant's days-from-civil).
    static func daysFromEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
