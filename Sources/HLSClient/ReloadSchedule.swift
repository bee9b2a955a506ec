/// When to load a live playlist again, without blocking reload.
///
/// RFC 8216 §6.3.4 sets the floor: after a load that found the playlist changed, wait at least the
/// target duration from when that load began; after one that found it unchanged, at least half of it.
/// Waiting just the floor keeps whatever phase the first load happened to have against the origin's
/// publications: up to a whole segment late for ever (the sawtooth FFmpeg's reader shows). So within
/// the floor, the next load is aimed just after the next segment is due.
///
/// A segment is due a segment duration after the previous one was published, and the newest one's
/// publication lies in an interval: after the last load that did not see it, at or before the
/// first that did. Each load narrows the interval. While it is wide, the schedule lets one segment
/// go by and aims at the middle of the next one's interval (a later load sees both); once narrow, it
/// aims at the end of the interval plus a small margin, so every segment is seen within about the
/// width of the interval plus the margin of its publication.
public struct ReloadSchedule: Sendable {
    public typealias Instant = ContinuousClock.Instant
    public let targetDuration: Duration
    /// Added to the predicted publication: the origin's jitter and the request's own time.
    public var margin: Duration = .milliseconds(40)
    /// An interval wider than this is narrowed first (at the cost of one segment's delay).
    public var lockWidth: Duration = .milliseconds(150)

    /// When the newest segment seen was published: after `earliest`, at or before `latest`.
    private(set) var earliest: Instant?
    private(set) var latest: Instant?
    /// Recent segment durations: the next one is predicted no shorter than the longest of them.
    private var durations: [Duration] = []
    private var lastLoad: (start: Instant, changed: Bool)?

    public init(targetDuration: Duration) {
        self.targetDuration = targetDuration
    }

    /// The next segment's duration, as predicted.
    private var predictedDuration: Duration { durations.max() ?? targetDuration }

    /// Records a load that began at `start`. `newSegments` are the durations of the segments it found
    /// that the previous load did not list, oldest first (empty: unchanged).
    public mutating func loaded(at start: Instant, newSegments: [Duration]) {
        defer { lastLoad = (start, !newSegments.isEmpty) }
        guard let previous = lastLoad else {
            // The first load: the newest segment came out at most a segment before.
            earliest = newSegments.last.map { start - $0 } ?? start - targetDuration
            latest = start
            record(newSegments)
            return
        }
        guard !newSegments.isEmpty else {
            // The next segment was not out when this load began.
            pendingNotBefore = start
            return
        }
        let jitter = Duration.milliseconds(20)
        if newSegments.count == 1, let earliest, let latest {
            // One new segment: it came out about its duration after the previous one.
            let d = newSegments[0]
            var low = earliest + d - jitter, high = latest + d + jitter
            if let notBefore = pendingNotBefore { low = max(low, notBefore) }
            low = max(low, previous.start)
            high = min(high, start)
            if low < high {
                self.earliest = low
                self.latest = high
            } else {
                self.earliest = previous.start
                self.latest = start
            }
        } else {
            // Several at once (or a restart): only the bounds of this load hold.
            earliest = max(previous.start, pendingNotBefore ?? previous.start)
            latest = start
        }
        pendingNotBefore = nil
        record(newSegments)
    }

    /// The start of the last load that found nothing new, since the newest segment.
    private var pendingNotBefore: Instant?

    private mutating func record(_ new: [Duration]) {
        durations.append(contentsOf: new)
        if durations.count > 4 { durations.removeFirst(durations.count - 4) }
    }

    /// The earliest instant the RFC allows for the next load.
    public var floor: Instant? {
        guard let lastLoad else { return nil }
        return lastLoad.start + (lastLoad.changed ? targetDuration : targetDuration / 2)
    }

    /// When to begin the next load.
    public func nextLoad() -> Instant? {
        guard let floor, let earliest, let latest else { return floor }
        let d = predictedDuration
        let low = max(earliest + d, pendingNotBefore ?? earliest + d)
        let high = latest + d
        let aim: Instant
        if high - low > lockWidth {
            // Too wide to aim well. If the floor still lets us probe inside it, aim at its middle;
            // else let this segment go by and aim at the middle of the next one's interval.
            let middle = low + (high - low) / 2
            aim = middle >= floor ? middle : low + d + (high - low) / 2
        } else {
            aim = high + margin
        }
        // Never more than a target duration past the floor: a wrong prediction costs little.
        return min(max(floor, aim), floor + targetDuration)
    }
}
