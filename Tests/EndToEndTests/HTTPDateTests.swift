import Foundation
@_spi(Testing) import Serving
import Testing

/// HTTP dates as the file server reads and writes them, against Foundation's formatter (an
/// independent oracle on well-formed dates) and RFC 9110's examples; anything malformed is nil.
@Suite struct HTTPDateTests {
    static func oracle(_ format: String) -> DateFormatter {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = format
        return f
    }

    @Test func rfcExamplesInAllThreeForms() {
        let now = 1_795_600_000.0  // 2026
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == 784_111_777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", now: now) == 784_111_777)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994", now: now) == 784_111_777)
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        // A leap second is the next day's first second; the 30th of a 30-day month holds one too.
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 23:59:60 GMT", now: now) == 784_166_400)
        #expect(HTTPDate.parse("Wed, 30 Nov 1994 23:59:60 GMT") == 786_240_000)
        // Two-digit years: more than 50 years ahead is the century before.
        #expect(HTTPDate.parse("Saturday, 01-Jan-77 00:00:00 GMT", now: now) == 220_924_800)
        #expect(HTTPDate.parse("Saturday, 01-Jan-50 00:00:00 GMT", now: now) == 2_524_608_000)
    }

    @Test func agreesWithFoundationOnTenThousandInstants() {
        let imf = Self.oracle("EEE, dd MMM yyyy HH:mm:ss 'GMT'"), asctime = Self.oracle("EEE MMM d HH:mm:ss yyyy")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<10_000 {
            // 1900 to 2200, whole seconds.
            let seconds = Double(Int64.random(in: -2_208_988_800...7_258_118_400, using: &generator))
            let date = Date(timeIntervalSince1970: seconds)
            let text = HTTPDate.format(seconds)
            #expect(text == imf.string(from: date))
            #expect(HTTPDate.parse(text) == seconds, "\(text)")
            let old = asctime.string(from: date)
            // asctime pads a one-digit day with a space; Foundation's `d` does not pad.
            let padded = old.count == 23 ? String(old.prefix(8)) + " " + String(old.dropFirst(8)) : old
            #expect(HTTPDate.parse(padded) == seconds, "\(padded)")
        }
    }

    @Test(arguments: ["", "Sun", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 GMT ", " Sun, 06 Nov 1994 08:49:37 GMT",
                      "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT", "Sun, 29 Feb 1900 08:49:37 GMT",
                      "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 08:49:37 UTC",
                      "Sun, 06 Nob 1994 08:49:37 GMT", "Sun, 06 Nov 19940 08:49:37 GMT", "Sun, 0\u{663} Nov 1994 08:49:37 GMT",
                      "Sun, 06 Nov 1994 08:49:37.5 GMT", "Sun, 06 Nov 1994 08:49:37 GMT\u{0}", "Sunday, 06-Nov-1994 08:49:37 GMT",
                      "Sun Nov 6 08:49:37 1994", "Sun Nov  6 08:49:37 94", "1994-11-06T08:49:37Z", "784111777",
                      "Sun, 99999999999999999999999999999999999999 Nov 1994 08:49:37 GMT", String(repeating: "Sun, ", count: 10_000)])
    func malformedDatesAreNil(_ text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }
}
