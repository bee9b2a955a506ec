import FoundationEssentials

/// Boxes over time, as a face or plate detector writes them (`track=FILE`): CSV with the header
/// `time,x,y,w,h` (optional `id`; other columns, such as a score, are ignored) or a JSON array of
/// objects with those keys. Times are output seconds; boxes are pixels of the picture entering the
/// filter.
///
/// Rows with the same `id` are one object, interpolated linearly between its keyframes, shown from
/// its first keyframe and held `hold` seconds after its last (a detector that misses a face for a
/// few frames must not unmask it). Without ids, the k-th box at each time is object k.
public struct Track: Sendable, Equatable {
    public struct Key: Sendable, Equatable {
        public var time: Double
        public var box: Box
    }

    /// Each object's keyframes, in time order.
    public let objects: [[Key]]
    public let hold: Double

    public enum Parameters {
        /// Long enough that a detector that misses a face for a few frames does not unmask it.
        public static let hold = NumericParameter<Double>("hold", in: 0...3600, default: 1,
                                                          summary: "seconds a track's box stays after its last keyframe")
    }

    @available(*, deprecated, message: "use Parameters.hold.defaultValue") public static var defaultHold: Double { Parameters.hold.defaultValue! }

    public init(objects: [[Key]], hold: Double = Parameters.hold.defaultValue!) {
        self.objects = objects.filter { !$0.isEmpty }
        self.hold = hold
    }

    /// The boxes shown at `seconds`.
    public func boxes(at seconds: Double) -> [Box] {
        var out: [Box] = []
        for keys in objects {
            guard seconds >= keys[0].time else { continue }
            let last = keys[keys.count - 1]
            if seconds >= last.time {
                if seconds <= last.time + hold { out.append(last.box) }
                continue
            }
            var i = 1
            while keys[i].time <= seconds { i += 1 }
            let a = keys[i - 1], b = keys[i]
            let s = (seconds - a.time) / (b.time - a.time)
            func mix(_ p: Double, _ q: Double) -> Double { p + (q - p) * s }
            out.append(Box(x: mix(a.box.x, b.box.x), y: mix(a.box.y, b.box.y),
                           width: mix(a.box.width, b.box.width), height: mix(a.box.height, b.box.height)))
        }
        return out
    }

    /// Why a track file cannot be used.
    public struct LoadError: Error, Sendable, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "\(path): \(reason)" }
    }

    /// One row of a track file.
    struct Row: Sendable {
        var time, x, y, w, h: Double
        var id: String?
        /// "line 4" (CSV) or "object 4" (JSON), for messages.
        var place: String
    }

    /// Reads a `.csv` or `.json` file (JSON when its first non-blank character is `[`).
    public static func load(path: String, hold: Double = Parameters.hold.defaultValue!) throws(LoadError) -> Track {
        try load(file: ChainFile(path: path), hold: hold)
    }

    static func load(file: ChainFile, hold: Double) throws(LoadError) -> Track {
        let path = file.spelled
        let data: Data
        do throws(ChainFile.ReadError) {
            data = Data(try file.open(largest: 256 << 20).bytes())
        } catch {
            throw LoadError(path: path, reason: error.reason)
        }
        guard let text = String(data: data, encoding: .utf8) else { throw LoadError(path: path, reason: "not UTF-8 text") }
        let rows: [Row]
        if text.first(where: { !$0.isWhitespace }) == "[" {
            rows = try parseJSON(data, path: path)
        } else {
            rows = try parseCSV(text, path: path)
        }
        return try Track(rows: rows, hold: hold, path: path)
    }

    init(rows: [Row], hold: Double, path: String) throws(LoadError) {
        for row in rows {
            let values = [row.time, row.x, row.y, row.w, row.h]
            guard values.allSatisfy(\.isFinite) else {
                throw LoadError(path: path, reason: "\(row.place): a value is not a finite number")
            }
            guard row.time >= 0 else { throw LoadError(path: path, reason: "\(row.place): time \(row.time) is negative") }
            guard row.w >= 0, row.h >= 0 else { throw LoadError(path: path, reason: "\(row.place): w and h must not be negative") }
        }
        var groups: [[Row]] = []
        if rows.contains(where: { $0.id != nil }) {
            var index: [String: Int] = [:]
            for row in rows {
                let id = row.id ?? ""
                if let i = index[id] { groups[i].append(row) } else {
                    index[id] = groups.count
                    groups.append([row])
                }
            }
        } else {
            // No ids: the k-th box at each time belongs to object k.
            var byTime: [Double: Int] = [:]
            for row in rows {
                let k = byTime[row.time, default: 0]
                byTime[row.time] = k + 1
                if k == groups.count { groups.append([]) }
                groups[k].append(row)
            }
        }
        var objects: [[Key]] = []
        for group in groups {
            let sorted = group.sorted { $0.time < $1.time }
            for (a, b) in zip(sorted, sorted.dropFirst()) where a.time == b.time {
                throw LoadError(path: path, reason: "\(a.place) and \(b.place): one object (id \(a.id ?? "none")) has two boxes at \(formatNumber(a.time)) s")
            }
            objects.append(sorted.map { Key(time: $0.time, box: Box(x: $0.x, y: $0.y, width: $0.w, height: $0.h)) })
        }
        self.init(objects: objects, hold: hold)
    }

    static func parseCSV(_ text: String, path: String) throws(LoadError) -> [Row] {
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated()
            .map { (number: $0.offset + 1, text: $0.element.trimmingCharacters(in: .whitespaces)) }
            .filter { !$0.text.isEmpty && !$0.text.hasPrefix("#") }
        guard !lines.isEmpty else { throw LoadError(path: path, reason: "empty; expected the header time,x,y,w,h") }
        let header = lines.removeFirst().text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        var column: [String: Int] = [:]
        for (i, name) in header.enumerated() where column[name] == nil { column[name] = i }
        let required = ["time", "x", "y", "w", "h"]
        let missing = required.filter { column[$0] == nil }
        guard missing.isEmpty else {
            throw LoadError(path: path, reason: "the header lacks \(missing.joined(separator: ", ")); expected time,x,y,w,h[,id]")
        }
        var rows: [Row] = []
        for line in lines {
            let fields = line.text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard fields.count >= header.count else {
                throw LoadError(path: path, reason: "line \(line.number): \(fields.count) fields, the header has \(header.count)")
            }
            func number(_ name: String) throws(LoadError) -> Double {
                let text = fields[column[name]!]
                guard let value = Double(text), value.isFinite else {
                    throw LoadError(path: path, reason: "line \(line.number): \(name) '\(text)' is not a number")
                }
                return value
            }
            let id = column["id"].map { fields[$0] }.flatMap { $0.isEmpty ? nil : $0 }
            rows.append(Row(time: try number("time"), x: try number("x"), y: try number("y"),
                            w: try number("w"), h: try number("h"), id: id, place: "line \(line.number)"))
        }
        return rows
    }

    private struct JSONRow: Decodable {
        var time, x, y, w, h: Double
        var id: String?

        enum CodingKeys: String, CodingKey { case time, x, y, w, h, id }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            (time, x, y) = (try c.decode(Double.self, forKey: .time), try c.decode(Double.self, forKey: .x), try c.decode(Double.self, forKey: .y))
            (w, h) = (try c.decode(Double.self, forKey: .w), try c.decode(Double.self, forKey: .h))
            // Detectors write ids as numbers or strings.
            if let text = try? c.decodeIfPresent(String.self, forKey: .id) { id = text }
            else if let number = try? c.decodeIfPresent(Int.self, forKey: .id) { id = String(number) }
            else { id = nil }
        }
    }

    static func parseJSON(_ data: Data, path: String) throws(LoadError) -> [Row] {
        do {
            let rows = try JSONDecoder().decode([JSONRow].self, from: data)
            return rows.enumerated().map { Row(time: $1.time, x: $1.x, y: $1.y, w: $1.w, h: $1.h, id: $1.id, place: "object \($0 + 1)") }
        } catch let DecodingError.keyNotFound(key, context) {
            throw LoadError(path: path, reason: "object \(objectNumber(context)) has no \"\(key.stringValue)\"; expected time, x, y, w, h (and optionally id)")
        } catch let DecodingError.typeMismatch(_, context) {
            throw LoadError(path: path, reason: "object \(objectNumber(context)): \"\(context.codingPath.last?.stringValue ?? "?")\" is not a number")
        } catch {
            throw LoadError(path: path, reason: "not a JSON array of {time, x, y, w, h} objects")
        }
    }

    private static func objectNumber(_ context: DecodingError.Context) -> String {
        context.codingPath.first?.intValue.map { "\($0 + 1)" } ?? "?"
    }
}
