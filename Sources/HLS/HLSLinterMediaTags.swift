/// The linter's checks of a media playlist's keys, byte ranges, gaps and Low-Latency HLS tags
/// (rfc8216bis §4.4.3.7–8, §4.4.4, §4.4.5, §6.2.2, §6.2.5). `HLSLinter.lintMedia` feeds it every tag
/// and URI line, then calls `finish`. Textual rules only: what a part's media holds cannot be seen here.
struct MediaTagChecks {
    typealias Report = (Int, String, LintSeverity, String) -> Void

    static let rules: [String: String] = [
        "key-attributes": "EXT-X-KEY needs a known METHOD, a quoted URI unless METHOD=NONE, nothing else with NONE, KEYFORMATVERSIONS as n/n/…",
        "key-iv": "an IV is a 128-bit hexadecimal-sequence (0x and up to 32 hex digits), and not allowed with SAMPLE-AES-CTR or AES-256-GCM",
        "key-iv-for-map": "an EXT-X-MAP encrypted with AES-128 needs an IV on its EXT-X-KEY",
        "byterange-offset": "a byte range without offset must follow a range of the same resource; EXT-X-MAP's needs an offset",
        "gap": "EXT-X-GAP takes no value and must apply to a segment",
        "part-inf-missing": "a playlist with EXT-X-PART needs EXT-X-PART-INF",
        "part-attributes": "EXT-X-PART needs a quoted URI and a DURATION; INDEPENDENT and GAP are YES; BYTERANGE is n[@o]",
        "part-duration-exceeded": "a part's DURATION is above PART-TARGET",
        "part-duration-short": "a part other than a parent's last, an INDEPENDENT or GAP one or one before a GAP is under 85% of PART-TARGET",
        "part-tag-order": "EXT-X-DISCONTINUITY, EXT-X-KEY, EXT-X-MAP and EXT-X-PROGRAM-DATE-TIME of a parent come before its first part",
        "part-too-old": "EXT-X-PART tags more than three target durations from the end of the playlist should be removed",
        "parts-in-i-frames-playlist": "an I-frame playlist should not use partial segments",
        "part-hold-back": "PART-HOLD-BACK is required with EXT-X-PART-INF, at least 2 × PART-TARGET, and should be 3 ×",
        "hold-back": "HOLD-BACK must be at least 3 × the target duration",
        "can-skip-until": "CAN-SKIP-UNTIL must be at least 6 × the target duration; CAN-SKIP-DATERANGES needs it",
        "server-control-attributes": "EXT-X-SERVER-CONTROL and EXT-X-PART-INF values are decimal numbers or YES",
        "skip-not-advertised": "EXT-X-SKIP needs CAN-SKIP-UNTIL in EXT-X-SERVER-CONTROL",
        "skip-invalid": "EXT-X-SKIP needs SKIPPED-SEGMENTS, comes before the first segment and never with EXT-X-ENDLIST",
        "preload-hint-attributes": "EXT-X-PRELOAD-HINT needs TYPE=PART or MAP and a quoted URI; BYTERANGE-START/LENGTH are integers",
        "preload-hint-duplicate": "more than one EXT-X-PRELOAD-HINT of one TYPE",
        "preload-hint-with-endlist": "a playlist with EXT-X-ENDLIST has no EXT-X-PRELOAD-HINT",
        "rendition-report-attributes": "EXT-X-RENDITION-REPORT needs a quoted URI; LAST-MSN and LAST-PART are integers",
        "rendition-report-missing": "an LL-HLS rendition reports every other rendition of its multivariant playlist",
    ]

    /// Renditions in the multivariant playlist this one belongs to, when the caller knows.
    let renditionCount: Int?

    private var lastKey: (method: String, hasIV: Bool)?
    private var previousSegment: (uri: String, ranged: Bool)?
    private var pendingRange: (line: Int, hasOffset: Bool)?
    private var pendingGap: Int?
    private var segmentCount = 0
    private var skipLine: Int?
    // Low-latency state.
    private var partInf: (line: Int, target: Double?)?
    private var serverControl: (line: Int, attributes: [HLSAttribute])?
    private struct Part { var line: Int; var duration: Double?; var independent: Bool; var gap: Bool; var uri: String?; var range: ByteRange? }
    private var parentParts: [Part] = []
    /// Every part with its end time from the start of the playlist, for `part-too-old`.
    private var partEnds: [(line: Int, end: Double)] = []
    private var elapsed = 0.0
    private var firstPartLine: Int?
    private var hintLines: [String: Int] = [:]
    private var firstHintLine: Int?
    private var reportCount = 0

    init(renditionCount: Int?) {
        self.renditionCount = renditionCount
    }

    // MARK: - Lines

    mutating func tag(_ name: String, _ value: String?, line: Int, needs: inout [(version: Int, line: Int, reason: String)], report: Report) {
        let v = value ?? ""
        switch name {
        case "#EXT-X-KEY":
            orderAfterParts(name, line, report)
            if let a = HLSAttributeList.parse(v) { key(a, line: line, report) }
        case "#EXT-X-MAP":
            orderAfterParts(name, line, report)
            if let a = HLSAttributeList.parse(v) {
                if let range = a["BYTERANGE"], ByteRange(parsing: range.value)?.offset == nil {
                    report(line, "byterange-offset", .error, "the BYTERANGE of EXT-X-MAP, '\(range.value)', needs an offset: n@o")
                }
                if let key = lastKey, key.method == EncryptionMethod.aes128.rawValue, !key.hasIV {
                    report(line, "key-iv-for-map", .error, "EXT-X-MAP is encrypted with AES-128 but its EXT-X-KEY has no IV")
                }
            }
        case "#EXT-X-DISCONTINUITY", "#EXT-X-PROGRAM-DATE-TIME":
            orderAfterParts(name, line, report)
        case "#EXT-X-BYTERANGE":
            pendingRange = ByteRange(parsing: v).map { (line, $0.offset != nil) }
        case "#EXT-X-GAP":
            if value != nil { report(line, "gap", .error, "EXT-X-GAP takes no value") }
            pendingGap = line
        case "#EXT-X-BITRATE":
            if v.isEmpty || !v.allSatisfy(\.isASCIIDigit) { report(line, "tag-value", .error, "EXT-X-BITRATE '\(v)' is not a decimal integer of kbit/s") }
        case "#EXT-X-PART-INF":
            let target = HLSAttributeList.parse(v)?["PART-TARGET"].flatMap { decimal($0) }
            if target == nil { report(line, "server-control-attributes", .error, "EXT-X-PART-INF needs a positive decimal PART-TARGET") }
            partInf = (line, target)
        case "#EXT-X-SERVER-CONTROL":
            guard let a = HLSAttributeList.parse(v) else {
                report(line, "attribute-list", .error, "EXT-X-SERVER-CONTROL has a malformed attribute list")
                return
            }
            for attribute in a {
                let ok = switch attribute.name {
                case "CAN-SKIP-UNTIL", "HOLD-BACK", "PART-HOLD-BACK": decimal(attribute) != nil
                case "CAN-SKIP-DATERANGES", "CAN-BLOCK-RELOAD": attribute.value == "YES" && !attribute.isQuoted
                default: true
                }
                if !ok { report(line, "server-control-attributes", .error, "\(attribute.name)=\(attribute.value) is not a valid value") }
            }
            serverControl = (line, a)
        case "#EXT-X-SKIP":
            skipLine = line
            needs.append((9, line, "EXT-X-SKIP"))
            let a = HLSAttributeList.parse(v) ?? []
            if a["SKIPPED-SEGMENTS"].map({ !$0.value.isEmpty && $0.value.allSatisfy(\.isASCIIDigit) && !$0.isQuoted }) != true {
                report(line, "skip-invalid", .error, "EXT-X-SKIP needs a decimal-integer SKIPPED-SEGMENTS")
            }
            if a["RECENTLY-REMOVED-DATERANGES"] != nil { needs.append((10, line, "RECENTLY-REMOVED-DATERANGES in EXT-X-SKIP")) }
            if segmentCount > 0 || !parentParts.isEmpty {
                report(line, "skip-invalid", .error, "EXT-X-SKIP replaces the first segments: it cannot come after a segment")
            }
        case "#EXT-X-PART":
            part(v, line: line, report)
        case "#EXT-X-PRELOAD-HINT":
            firstHintLine = firstHintLine ?? line
            guard let a = HLSAttributeList.parse(v) else {
                report(line, "attribute-list", .error, "EXT-X-PRELOAD-HINT has a malformed attribute list")
                return
            }
            let type = a["TYPE"]?.value ?? ""
            if PreloadHint.Kind(rawValue: type) == nil {
                report(line, "preload-hint-attributes", .error, "EXT-X-PRELOAD-HINT TYPE '\(type)' is neither PART nor MAP")
            } else if let first = hintLines[type] {
                report(line, "preload-hint-duplicate", .warning, "a second EXT-X-PRELOAD-HINT of TYPE=\(type) (the first is on line \(first)); clients use only the first")
            } else {
                hintLines[type] = line
            }
            if a["URI"]?.isQuoted != true { report(line, "preload-hint-attributes", .error, "EXT-X-PRELOAD-HINT needs a quoted URI") }
            for name in ["BYTERANGE-START", "BYTERANGE-LENGTH"] {
                if let n = a[name], !isDecimalInteger(n) { report(line, "preload-hint-attributes", .error, "\(name)=\(n.value) is not a decimal integer") }
            }
        case "#EXT-X-RENDITION-REPORT":
            reportCount += 1
            guard let a = HLSAttributeList.parse(v) else {
                report(line, "attribute-list", .error, "EXT-X-RENDITION-REPORT has a malformed attribute list")
                return
            }
            if a["URI"]?.isQuoted != true { report(line, "rendition-report-attributes", .error, "EXT-X-RENDITION-REPORT needs a quoted URI") }
            for name in ["LAST-MSN", "LAST-PART"] {
                if let n = a[name], !isDecimalInteger(n) { report(line, "rendition-report-attributes", .error, "\(name)=\(n.value) is not a decimal integer") }
            }
        default:
            break
        }
    }

    /// A segment URI line ends its parent: its parts are judged, its range and gap applied.
    mutating func segment(_ uri: String, line: Int, duration: Double?, report: Report) {
        if let range = pendingRange, !range.hasOffset {
            let follows = previousSegment.map { $0.uri == uri && $0.ranged } ?? (skipLine != nil)
            if !follows {
                report(range.line, "byterange-offset", .error,
                       "EXT-X-BYTERANGE has no offset but the segment before it is not a range of '\(uri)' (RFC 8216 §4.3.2.2: clients fail)")
            }
        }
        closeParent(final: true, start: elapsed, report)
        elapsed += duration ?? 0
        previousSegment = (uri, pendingRange != nil)
        pendingRange = nil
        pendingGap = nil
        segmentCount += 1
    }

    mutating func finish(target: Int?, iFramesOnly: Bool, endListLine: Int?, lastLine: Int, report: Report) {
        if let gap = pendingGap { report(gap, "gap", .error, "EXT-X-GAP is not followed by a segment") }
        let inProgress = parentParts
        closeParent(final: false, start: elapsed, report)
        let end = elapsed + inProgress.reduce(0) { $0 + ($1.duration ?? 0) }

        if let firstPartLine {
            if partInf == nil { report(firstPartLine, "part-inf-missing", .error, "EXT-X-PART needs EXT-X-PART-INF (rfc8216bis §4.4.3.7)") }
            if iFramesOnly { report(firstPartLine, "parts-in-i-frames-playlist", .warning, "an I-frame playlist should not use partial segments (rfc8216bis §4.4.4.9)") }
            // §6.2.2: EXT-X-PART tags SHOULD be removed once more than three target durations from the end.
            if let target, target > 0 {
                for part in partEnds where end - part.end > 3 * Double(target) + 1e-9 {
                    report(part.line, "part-too-old", .warning,
                           "this part ends \(HLSNumber.decimal(end - part.end, places: 3)) s before the end of the playlist, more than 3 target durations (rfc8216bis §6.2.2)")
                }
            }
            if let count = renditionCount, count > 1, reportCount < count - 1 {
                report(lastLine, "rendition-report-missing", .warning,
                       "\(reportCount) EXT-X-RENDITION-REPORT for the \(count - 1) other renditions: clients must tune in to switch (rfc8216bis Appendix B.1)")
            }
        }
        checkServerControl(target: target, report)
        if let skipLine {
            if serverControl?.attributes["CAN-SKIP-UNTIL"] == nil {
                report(skipLine, "skip-not-advertised", .error, "EXT-X-SKIP in a playlist without CAN-SKIP-UNTIL: a server must ignore _HLS_skip then (rfc8216bis §6.2.5.1)")
            }
            if let endListLine { report(skipLine, "skip-invalid", .error, "EXT-X-SKIP with EXT-X-ENDLIST (line \(endListLine)): a server ignores _HLS_skip then") }
        }
        if let firstHintLine, let endListLine {
            report(firstHintLine, "preload-hint-with-endlist", .error, "EXT-X-PRELOAD-HINT in a playlist with EXT-X-ENDLIST (line \(endListLine), rfc8216bis §4.4.5.3)")
        }
    }

    // MARK: - Rules

    private mutating func key(_ a: [HLSAttribute], line: Int, _ report: Report) {
        guard let method = a["METHOD"]?.value else {
            report(line, "key-attributes", .error, "EXT-X-KEY has no METHOD")
            return
        }
        if !EncryptionMethod.known.contains(EncryptionMethod(rawValue: method)) {
            report(line, "key-attributes", .error, "EXT-X-KEY METHOD '\(method)' is not one of \(EncryptionMethod.known.map(\.rawValue).joined(separator: ", "))")
        }
        if method == EncryptionMethod.none.rawValue {
            if a.count > 1 { report(line, "key-attributes", .error, "EXT-X-KEY METHOD=NONE has other attributes (\(a.filter { $0.name != "METHOD" }.map(\.name).joined(separator: ", ")))") }
            lastKey = nil
            return
        }
        if a["URI"]?.isQuoted != true { report(line, "key-attributes", .error, "EXT-X-KEY METHOD=\(method) needs a quoted URI") }
        if let iv = a["IV"] {
            if iv.isQuoted || InitializationVector(hexadecimal: iv.value) == nil {
                report(line, "key-iv", .error, "IV '\(iv.value)' is not a 128-bit hexadecimal-sequence (0x and up to 32 hex digits)")
            }
            if method == EncryptionMethod.sampleAESCTR.rawValue || method == EncryptionMethod.aes256GCM.rawValue {
                report(line, "key-iv", .error, "METHOD=\(method) takes no IV (rfc8216bis §4.4.4.4)")
            }
        }
        if let versions = a["KEYFORMATVERSIONS"] {
            let ok = versions.value.split(separator: "/", omittingEmptySubsequences: false)
                .allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) && (Int($0) ?? 0) > 0 }
            if !ok { report(line, "key-attributes", .error, "KEYFORMATVERSIONS '\(versions.value)' is not positive integers separated by '/'") }
        }
        lastKey = (method, a["IV"] != nil)
    }

    private mutating func part(_ value: String, line: Int, _ report: Report) {
        firstPartLine = firstPartLine ?? line
        guard let a = HLSAttributeList.parse(value) else {
            report(line, "attribute-list", .error, "EXT-X-PART has a malformed attribute list")
            parentParts.append(Part(line: line, duration: nil, independent: false, gap: false, uri: nil, range: nil))
            return
        }
        let duration = a["DURATION"].flatMap { decimal($0, allowZero: true) }
        if duration == nil { report(line, "part-attributes", .error, "EXT-X-PART needs a decimal DURATION") }
        if a["URI"]?.isQuoted != true { report(line, "part-attributes", .error, "EXT-X-PART needs a quoted URI") }
        for name in ["INDEPENDENT", "GAP"] {
            if let flag = a[name], flag.value != "YES" || flag.isQuoted { report(line, "part-attributes", .error, "\(name)=\(flag.value): the only value is YES") }
        }
        var range: ByteRange?
        if let text = a["BYTERANGE"] {
            range = ByteRange(parsing: text.value)
            if range == nil || !text.isQuoted { report(line, "part-attributes", .error, "BYTERANGE=\(text.value) is not a quoted n[@o]") }
        }
        if let range, range.offset == nil, !(parentParts.last.map { $0.uri == a["URI"]?.value && $0.range != nil } ?? false) {
            report(line, "byterange-offset", .error, "the part's BYTERANGE has no offset but does not follow a range of the same resource in its parent segment")
        }
        if let duration, let target = partInf?.target, duration > target + 1e-9 {
            report(line, "part-duration-exceeded", .error, "part DURATION \(duration) is above PART-TARGET \(target) (rfc8216bis §4.4.4.9)")
        }
        parentParts.append(Part(line: line, duration: duration, independent: a["INDEPENDENT"]?.value == "YES",
                                gap: a["GAP"]?.value == "YES", uri: a["URI"]?.value, range: range))
    }

    /// A tag a parent segment shares with its first part, seen after a part of that parent.
    private func orderAfterParts(_ name: String, _ line: Int, _ report: Report) {
        guard let first = parentParts.first else { return }
        report(line, "part-tag-order", .error,
               "\(name.dropFirst()) comes after the first EXT-X-PART of its segment (line \(first.line)); it must come before (rfc8216bis §4.4.4.9)")
    }

    /// Judges the parts of the parent that ends here (`final`) or is still being written.
    private mutating func closeParent(final: Bool, start: Double, _ report: Report) {
        defer { parentParts = [] }
        var end = start
        for (i, part) in parentParts.enumerated() {
            end += part.duration ?? 0
            partEnds.append((part.line, end))
            // §4.4.4.9: at least 85% of PART-TARGET, except the parent's last part (unknown while it is
            // being written), INDEPENDENT or GAP parts, and a part right before a GAP part.
            guard let target = partInf?.target, let duration = part.duration else { continue }
            let isLast = i == parentParts.count - 1
            if isLast || part.independent || part.gap || (!isLast && parentParts[i + 1].gap) { continue }
            if duration < 0.85 * target - 1e-9 {
                report(part.line, "part-duration-short", .error,
                       "part DURATION \(duration) is under 85% of PART-TARGET \(target) and it is not its segment's last, INDEPENDENT or GAP part (rfc8216bis §4.4.4.9)")
            }
        }
    }

    /// §4.4.3.8: CAN-SKIP-UNTIL ≥ 6 × target duration; HOLD-BACK ≥ 3 × target duration;
    /// PART-HOLD-BACK required with EXT-X-PART-INF, ≥ 2 × PART-TARGET (MUST) and ≥ 3 × (SHOULD).
    private func checkServerControl(target: Int?, _ report: Report) {
        let a = serverControl?.attributes ?? []
        let line = serverControl?.line ?? partInf?.line ?? 1
        if let target {
            if let skip = a["CAN-SKIP-UNTIL"].flatMap({ decimal($0, allowZero: true) }), skip < 6 * Double(target) {
                report(line, "can-skip-until", .error, "CAN-SKIP-UNTIL \(skip) is under 6 × the target duration \(target) (rfc8216bis §4.4.3.8)")
            }
            if let hold = a["HOLD-BACK"].flatMap({ decimal($0, allowZero: true) }), hold < 3 * Double(target) {
                report(line, "hold-back", .error, "HOLD-BACK \(hold) is under 3 × the target duration \(target) (rfc8216bis §4.4.3.8)")
            }
        }
        if a["CAN-SKIP-DATERANGES"] != nil, a["CAN-SKIP-UNTIL"] == nil {
            report(line, "can-skip-until", .error, "CAN-SKIP-DATERANGES needs CAN-SKIP-UNTIL (rfc8216bis §4.4.3.8)")
        }
        guard let partInf else { return }
        guard let hold = a["PART-HOLD-BACK"].flatMap({ decimal($0, allowZero: true) }) else {
            report(line, "part-hold-back", .error, "a playlist with EXT-X-PART-INF needs PART-HOLD-BACK in EXT-X-SERVER-CONTROL (rfc8216bis §4.4.3.8)")
            return
        }
        guard let partTarget = partInf.target else { return }
        if hold < 2 * partTarget - 1e-9 {
            report(line, "part-hold-back", .error, "PART-HOLD-BACK \(hold) is under 2 × PART-TARGET \(partTarget): it MUST be at least twice (rfc8216bis §4.4.3.8)")
        } else if hold < 3 * partTarget - 1e-9 {
            report(line, "part-hold-back", .warning, "PART-HOLD-BACK \(hold) is under 3 × PART-TARGET \(partTarget): it SHOULD be at least three times (rfc8216bis §4.4.3.8)")
        }
    }

    /// A decimal-floating-point attribute: digits and at most one point, not quoted, positive (or zero).
    private func decimal(_ a: HLSAttribute, allowZero: Bool = false) -> Double? {
        let text = a.value
        guard !a.isQuoted, !text.isEmpty, text.allSatisfy({ $0.isASCIIDigit || $0 == "." }), text.count(where: { $0 == "." }) <= 1,
              let d = Double(text), d.isFinite, allowZero ? d >= 0 : d > 0 else { return nil }
        return d
    }

    private func isDecimalInteger(_ a: HLSAttribute) -> Bool {
        !a.isQuoted && !a.value.isEmpty && a.value.allSatisfy(\.isASCIIDigit) && Int(a.value) != nil
    }
}
