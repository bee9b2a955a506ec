import Foundation

/// `EXT-X-DATERANGE` (rfc8216bis §4.4.5.1): a range of time on the playlist's date clock with
/// attributes — an ad break's SCTE-35 (`SCTE35-OUT`/`-IN`/`-CMD`, §4.4.5.1.1), an interstitial
/// (`CLASS="com.apple.hls.interstitial"`), a program boundary. Placed in time by `START-DATE`
/// against the segments' `EXT-X-PROGRAM-DATE-TIME`, not by where the tag stands.
public struct DateRange: Sendable, Equatable {
    public var id: String
    /// `CLASS`: the set of attributes and semantics the range follows.
    public var rangeClass: String?
    public var startDate: Date
    /// `CUE` (PRE, POST, ONCE: an interstitial's trigger), as written.
    public var cue: String?
    public var endDate: Date?
    /// Seconds.
    public var duration: Double?
    public var plannedDuration: Double?
    /// The SCTE-35 sections, as written (hexadecimal-sequences, `0x…`).
    public var scte35Command: String?
    public var scte35Out: String?
    public var scte35In: String?
    /// `END-ON-NEXT=YES`: the range ends where the next of its class starts.
    public var endOnNext: Bool
    /// `X-…` client attributes, in the order written, with their quoting.
    public var clientAttributes: [HLSAttribute]
    /// Where the tag stood: before the segment at this index (the count: after the last), so a
    /// playlist read and written again keeps it there.
    public var position: Int
    public var line: Int

    public init(id: String, rangeClass: String? = nil, startDate: Date, cue: String? = nil, endDate: Date? = nil,
                duration: Double? = nil, plannedDuration: Double? = nil, scte35Command: String? = nil, scte35Out: String? = nil,
                scte35In: String? = nil, endOnNext: Bool = false, clientAttributes: [HLSAttribute] = [], position: Int = 0, line: Int = 0) {
        (self.id, self.rangeClass, self.startDate, self.cue, self.endDate) = (id, rangeClass, startDate, cue, endDate)
        (self.duration, self.plannedDuration) = (duration, plannedDuration)
        (self.scte35Command, self.scte35Out, self.scte35In) = (scte35Command, scte35Out, scte35In)
        (self.endOnNext, self.clientAttributes, self.position, self.line) = (endOnNext, clientAttributes, position, line)
    }

    /// The tag's attribute list, in the order the RFC lists them.
    public var attributeList: String {
        var a = ["ID=\"\(id)\""]
        if let rangeClass { a.append("CLASS=\"\(rangeClass)\"") }
        a.append("START-DATE=\"\(HLSDate.format(startDate))\"")
        if let cue { a.append("CUE=\"\(cue)\"") }
        if let endDate { a.append("END-DATE=\"\(HLSDate.format(endDate))\"") }
        if let duration { a.append("DURATION=\(HLSNumber.shortest(duration))") }
        if let plannedDuration { a.append("PLANNED-DURATION=\(HLSNumber.shortest(plannedDuration))") }
        for attribute in clientAttributes { a.append("\(attribute.name)=" + (attribute.isQuoted ? "\"\(attribute.value)\"" : attribute.value)) }
        if let scte35Command { a.append("SCTE35-CMD=\(scte35Command)") }
        if let scte35Out { a.append("SCTE35-OUT=\(scte35Out)") }
        if let scte35In { a.append("SCTE35-IN=\(scte35In)") }
        if endOnNext { a.append("END-ON-NEXT=YES") }
        return a.joined(separator: ",")
    }

    /// The range read from an attribute list; nil when it cannot be (no quoted ID, no readable
    /// START-DATE, a number or hexadecimal value that does not read): a client ignores such a tag,
    /// and the linter says why (`daterange-*`).
    public init?(attributes text: String, position: Int, line: Int) {
        guard let a = HLSAttributeList.parse(text), let id = a["ID"], id.isQuoted, !id.value.isEmpty,
              let start = a["START-DATE"], start.isQuoted, let startDate = HLSDate.parse(start.value) else { return nil }
        func quoted(_ name: String) -> String?? {
            guard let attribute = a[name] else { return .some(nil) }
            return attribute.isQuoted ? .some(attribute.value) : nil
        }
        func seconds(_ name: String) -> Double?? {
            guard let attribute = a[name] else { return .some(nil) }
            return attribute.isQuoted ? nil : PlaylistNumber.seconds(attribute.value).map { .some($0) }
        }
        func hex(_ name: String) -> String?? {
            guard let attribute = a[name] else { return .some(nil) }
            return !attribute.isQuoted && Self.isHexadecimalSequence(attribute.value) ? .some(attribute.value) : nil
        }
        guard let rangeClass = quoted("CLASS"), let cue = quoted("CUE"), let end = quoted("END-DATE"),
              let duration = seconds("DURATION"), let planned = seconds("PLANNED-DURATION"),
              let command = hex("SCTE35-CMD"), let out = hex("SCTE35-OUT"), let into = hex("SCTE35-IN") else { return nil }
        var endDate: Date?
        if let end {
            guard let date = HLSDate.parse(end) else { return nil }
            endDate = date
        }
        self.init(id: id.value, rangeClass: rangeClass, startDate: startDate, cue: cue, endDate: endDate, duration: duration,
                  plannedDuration: planned, scte35Command: command, scte35Out: out, scte35In: into,
                  endOnNext: a["END-ON-NEXT"]?.value == "YES", clientAttributes: a.filter { $0.name.hasPrefix("X-") },
                  position: position, line: line)
    }

    /// `0x` (or `0X`) and hexadecimal digits, at most 16 KiB of them (a SCTE-35 section is at most 4 KiB).
    static func isHexadecimalSequence(_ text: String) -> Bool {
        let digits = text.utf8.dropFirst(2)
        return (text.hasPrefix("0x") || text.hasPrefix("0X")) && !digits.isEmpty && digits.count <= 16384
            && digits.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 70) || ($0 >= 97 && $0 <= 102) }
    }
}

/// The older ad markers many origins still write before a segment (not in any RFC; Adobe and
/// Elemental's): `EXT-X-CUE-OUT`, `EXT-X-CUE-OUT-CONT`, `EXT-X-CUE-IN`.
public enum CueMarker: Sendable, Equatable {
    /// `#EXT-X-CUE-OUT[:seconds]` or `#EXT-X-CUE-OUT:DURATION=seconds`: a break starts at this segment.
    case out(duration: Double?)
    /// `#EXT-X-CUE-OUT-CONT:ElapsedTime=e,Duration=d` (or `e/d`): this segment is inside the break.
    case continuing(elapsed: Double?, duration: Double?)
    /// `#EXT-X-CUE-IN`: the program is back at this segment.
    case `in`

    /// The marker of a tag line (name with its `#`), nil for another tag.
    init?(tag name: String, value: String?) {
        let value = value ?? ""
        switch name {
        case "#EXT-X-CUE-OUT":
            let text = value.hasPrefix("DURATION=") ? String(value.dropFirst(9)) : value
            self = .out(duration: PlaylistNumber.seconds(text))
        case "#EXT-X-CUE-OUT-CONT":
            if let slash = value.firstIndex(of: "/"), !value.contains("=") {
                self = .continuing(elapsed: PlaylistNumber.seconds(String(value[..<slash])),
                                   duration: PlaylistNumber.seconds(String(value[value.index(after: slash)...])))
            } else {
                let a = HLSAttributeList.parse(value) ?? []
                let elapsed = (a["ElapsedTime"] ?? a["ELAPSEDTIME"]).flatMap { PlaylistNumber.seconds($0.value) }
                let duration = (a["Duration"] ?? a["DURATION"]).flatMap { PlaylistNumber.seconds($0.value) }
                self = .continuing(elapsed: elapsed, duration: duration)
            }
        case "#EXT-X-CUE-IN":
            self = .in
        default:
            return nil
        }
    }

    public var tag: String {
        switch self {
        case let .out(duration): "#EXT-X-CUE-OUT" + (duration.map { ":\(HLSNumber.shortest($0))" } ?? "")
        case let .continuing(elapsed, duration):
            "#EXT-X-CUE-OUT-CONT:" + [elapsed.map { "ElapsedTime=\(HLSNumber.shortest($0))" },
                                      duration.map { "Duration=\(HLSNumber.shortest($0))" }].compactMap { $0 }.joined(separator: ",")
        case .in: "#EXT-X-CUE-IN"
        }
    }
}
