/// Where a picture sits in the output, for filters that change over time (`enable=`, keyframed
/// parameters, tracks, fades, text tokens). A run evaluates its chain at each output tick's time,
/// so the same run gives the same frames offline and live.
public struct FrameTime: Sendable, Equatable {
    /// Output time of the picture in seconds (tick k of a constant-rate run: k / rate).
    public var seconds: Double
    /// Output picture number (the tick index on a constant-rate run).
    public var frame: Int
    /// The shown input frame's own time in seconds, when known (`{pts}`).
    public var sourceSeconds: Double?
    /// Wall clock when the picture was filtered, seconds since 1970 (`{date}`, for live runs).
    public var wallClock: Double?

    public init(seconds: Double, frame: Int, sourceSeconds: Double? = nil, wallClock: Double? = nil) {
        (self.seconds, self.frame, self.sourceSeconds, self.wallClock) = (seconds, frame, sourceSeconds, wallClock)
    }

    /// The first picture: what a chain rendered without a time sees.
    public static let zero = FrameTime(seconds: 0, frame: 0)
}

/// A renderer whose picture depends on the output time. The chain calls this instead of
/// `render(_:into:)`; `render(_:into:)` means time zero.
public protocol TimedFilterRenderer: FilterRenderer {
    func render(_ source: RGBImage, into destination: RGBImage, at time: FrameTime)
}

/// A renderer that changes a picture in place (it works only inside a region, or only some of the
/// time); the chain gives it its current buffer and skips a copy of the whole frame.
public protocol InPlaceFilterRenderer: FilterRenderer {
    func renderInPlace(_ image: RGBImage, at time: FrameTime)
}

/// A numeric parameter's values over time: `sigma=0@0,12@2,12@8,0@10`, linear between keyframes,
/// the first value before the first and the last after the last.
public struct Keyframes: Sendable, Equatable, CustomStringConvertible {
    public struct Key: Sendable, Equatable {
        public var time: Double
        public var value: Double
    }

    public let keys: [Key]

    /// Keyframes in time order; at least one.
    public init(_ keys: [Key]) {
        precondition(!keys.isEmpty, "Keyframes needs at least one key")
        self.keys = keys
    }

    /// Parses `V@T,V@T,…` (seconds, strictly increasing); nil when malformed. `value` parses one value.
    static func parse(_ text: String, value: (String) -> Double?) -> Keyframes? {
        var keys: [Key] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let pieces = part.split(separator: "@", omittingEmptySubsequences: false)
            guard pieces.count == 2, let v = value(String(pieces[0])),
                  let t = Double(pieces[1]), t.isFinite, t >= 0 else { return nil }
            if let last = keys.last, t <= last.time { return nil }
            keys.append(Key(time: t, value: v))
        }
        return keys.isEmpty ? nil : Keyframes(keys)
    }

    /// The value at `seconds`.
    public func value(at seconds: Double) -> Double {
        guard let first = keys.first, seconds > first.time else { return keys[0].value }
        guard let last = keys.last, seconds < last.time else { return keys[keys.count - 1].value }
        // Few keys: a linear search is faster than a binary one and simpler.
        var i = 1
        while keys[i].time <= seconds { i += 1 }
        let a = keys[i - 1], b = keys[i]
        return a.value + (b.value - a.value) * (seconds - a.time) / (b.time - a.time)
    }

    /// Values worth checking for their effect on the output size: each key and each midpoint.
    var samples: [Double] {
        var out = keys.map(\.value)
        for (a, b) in zip(keys, keys.dropFirst()) { out.append((a.value + b.value) / 2) }
        return out
    }

    public var description: String {
        keys.map { "\(formatNumber($0.value))@\(formatNumber($0.time))" }.joined(separator: ",")
    }
}

/// When a filter acts: `enable=2-5,8.5-10` (seconds of output time, each range from its start up
/// to but not including its end; `12-` runs to the end).
public struct EnableRanges: Sendable, Equatable, CustomStringConvertible {
    public struct Range: Sendable, Equatable {
        public var start: Double
        public var end: Double?
    }

    public let ranges: [Range]

    static func parse(_ text: String) -> EnableRanges? {
        var ranges: [Range] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let bounds = part.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard bounds.count == 2, let start = Double(bounds[0]), start.isFinite, start >= 0 else { return nil }
            if bounds[1].isEmpty {
                ranges.append(Range(start: start, end: nil))
                continue
            }
            guard let end = Double(bounds[1]), end.isFinite, end > start else { return nil }
            ranges.append(Range(start: start, end: end))
        }
        return ranges.isEmpty ? nil : EnableRanges(ranges: ranges)
    }

    public func contains(_ seconds: Double) -> Bool {
        ranges.contains { seconds >= $0.start && ($0.end.map { seconds < $0 } ?? true) }
    }

    public var description: String {
        ranges.map { "\(formatNumber($0.start))-\($0.end.map(formatNumber) ?? "")" }.joined(separator: ",")
    }
}
