import Foundation

/// The linter's checks of `EXT-X-DATERANGE` (rfc8216bis §4.4.5.1, §6.2.1): what a player needs to
/// place a range in time and to trust that two tags with one ID speak of one range.
struct DateRangeChecks {
    typealias Report = (Int, String, LintSeverity, String) -> Void

    static let rules: [String: String] = [
        "daterange-attributes": "EXT-X-DATERANGE needs a quoted ID and START-DATE (ISO 8601); END-DATE and CLASS quoted; DURATION and PLANNED-DURATION non-negative numbers; SCTE35-* hexadecimal-sequences",
        "daterange-end": "END-DATE is not before START-DATE, and equals START-DATE + DURATION when both are given",
        "daterange-end-on-next": "END-ON-NEXT=YES needs a CLASS and allows neither DURATION nor END-DATE",
        "daterange-same-id": "two EXT-X-DATERANGE tags with one ID must give the same value to every attribute both have",
        "daterange-program-date-time": "a playlist with EXT-X-DATERANGE needs at least one EXT-X-PROGRAM-DATE-TIME",
        "daterange-scte35": "SCTE35-OUT and SCTE35-IN belong to different tags of one range only as a pair: an IN needs its OUT's ID",
    ]

    private var first: (line: Int, attributes: [String: HLSAttribute])?
    private var byID: [String: (line: Int, attributes: [String: HLSAttribute])] = [:]
    private var sawDate = false
    private var firstLine: Int?

    mutating func programDateTime() { sawDate = true }

    mutating func dateRange(_ value: String?, line: Int, report: Report) {
        firstLine = firstLine ?? line
        guard let list = HLSAttributeList.parse(value ?? "") else {
            report(line, "daterange-attributes", .error, "EXT-X-DATERANGE has a malformed attribute list")
            return
        }
        let a = Dictionary(list.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        guard let id = a["ID"], id.isQuoted, !id.value.isEmpty else {
            report(line, "daterange-attributes", .error, "EXT-X-DATERANGE needs a quoted, non-empty ID")
            return
        }
        let start = a["START-DATE"].flatMap { $0.isQuoted ? HLSDate.parse($0.value) : nil }
        if start == nil { report(line, "daterange-attributes", .error, "EXT-X-DATERANGE \"\(id.value)\" needs a quoted ISO 8601 START-DATE") }
        for name in ["CLASS", "END-DATE", "CUE"] where a[name].map({ !$0.isQuoted }) ?? false {
            report(line, "daterange-attributes", .error, "\(name) of EXT-X-DATERANGE \"\(id.value)\" must be a quoted-string")
        }
        var end: Date?
        if let text = a["END-DATE"], text.isQuoted {
            end = HLSDate.parse(text.value)
            if end == nil { report(line, "daterange-attributes", .error, "END-DATE '\(text.value.prefix(40))' is not an ISO 8601 date") }
        }
        var duration: Double?
        for name in ["DURATION", "PLANNED-DURATION"] {
            guard let attribute = a[name] else { continue }
            let seconds = attribute.isQuoted ? nil : PlaylistNumber.seconds(attribute.value)
            if seconds == nil { report(line, "daterange-attributes", .error, "\(name) '\(attribute.value.prefix(40))' is not a non-negative number of seconds") }
            if name == "DURATION" { duration = seconds }
        }
        for name in ["SCTE35-CMD", "SCTE35-OUT", "SCTE35-IN"] {
            guard let attribute = a[name] else { continue }
            if attribute.isQuoted || !DateRange.isHexadecimalSequence(attribute.value) {
                report(line, "daterange-attributes", .error, "\(name) of EXT-X-DATERANGE \"\(id.value)\" is not a hexadecimal-sequence (0x…)")
            }
        }
        if let start, let end {
            if end < start { report(line, "daterange-end", .error, "END-DATE of \"\(id.value)\" is before its START-DATE") }
            if let duration, abs(end.timeIntervalSince(start) - duration) > 0.001 {
                report(line, "daterange-end", .error, "END-DATE of \"\(id.value)\" is not START-DATE + DURATION (\(HLSNumber.shortest(duration)) s)")
            }
        }
        if a["END-ON-NEXT"]?.value == "YES" {
            if a["CLASS"] == nil { report(line, "daterange-end-on-next", .error, "END-ON-NEXT=YES on \"\(id.value)\" needs a CLASS") }
            if a["DURATION"] != nil || a["END-DATE"] != nil {
                report(line, "daterange-end-on-next", .error, "END-ON-NEXT=YES on \"\(id.value)\" allows neither DURATION nor END-DATE")
            }
        }
        if let earlier = byID[id.value] {
            for (name, attribute) in a where earlier.attributes[name].map({ $0 != attribute }) ?? false {
                report(line, "daterange-same-id", .error,
                       "\(name) of \"\(id.value)\" differs from the same range's tag on line \(earlier.line)")
            }
            byID[id.value] = (earlier.line, earlier.attributes.merging(a) { old, _ in old })
        } else {
            if a["SCTE35-IN"] != nil, a["SCTE35-OUT"] == nil {
                report(line, "daterange-scte35", .warning, "SCTE35-IN on \"\(id.value)\" without an earlier SCTE35-OUT of that ID")
            }
            byID[id.value] = (line, a)
        }
    }

    func finish(report: Report) {
        if let firstLine, !sawDate {
            report(firstLine, "daterange-program-date-time", .error, "EXT-X-DATERANGE needs at least one EXT-X-PROGRAM-DATE-TIME in the playlist")
        }
    }
}
