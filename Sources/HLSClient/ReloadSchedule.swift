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
///
/// Each probe for the phase costs a segment up to a target duration of delay (after a load that saw
/// a change the next may not come sooner), so the source's clock is used where the playlist gives
/// one: a segment cannot be published before its last picture was taken, so its program date-time
/// plus its duration bounds its publication from below, if the source's clock and ours agree (NTP).
/// The first probe then bets that the origin publishes promptly (within `lockWidth` of that end, as a
/// live packager does): won, the phase is found in one probe; lost, the bound still holds and the
/// search goes on from it. A program date-time that would put a publication after the load that saw
/// it shows the clocks disagree: it is not used again.
public struct ReloadSchedule: Sendable {
    public typealias Instant = ContinuousClock.Instant
    public let targetDuration: Duration
    /// Added to the predicted publication: the origin's jitter and the request's own time.
    public var margin: Duration = .milliseconds(40)
    /// A segment due this much before the floor is loaded at the floor; later than that, the
    /// schedule lets it go by to get back in phase. Every load at the floor starts a little late
    /// (a timer, a thread to wake: under load tens of milliseconds now and then), and the next
    /// floor counts from that start, so the phase creeps later and only a segment let go by brings
    /// it back: that costs the segment a whole target duration, a burst a loaded pipeline takes
    /// several segments to work off. So the creep is borne up to a quarter of the target duration
    /// (at least 150 ms): on a loaded machine a segment is let go by every few minutes, not every
    /// forty seconds.
    public var rephaseAfter: Duration
    /// An interval wider than this is narrowed first (at the cost of one segment's delay).
    public var lockWidth: Duration = .milliseconds(200)

    /// When the newest segment seen was published: after `earliest`, at or before `latest`.
    private(set) var earliest: Instant?
    private(set) var latest: Instant?
    /// Whether the source's clock (program date-times) may bound publications; whether the
    /// next probe bets on a prompt origin (the bound is what limits the interval from below).
    private var sourceClockUsable = true
    private var betOnPromptOrigin = false
    /// Recent segment durations: the next one is predicted no shorter than the longest of them.
    private var durations: [Duration] = []
    private var lastLoad: (start: Instant, changed: Bool)?

    public init(targetDuration: Duration) {
        self.targetDuration = targetDuration
        self.rephaseAfter = max(.milliseconds(150), targetDuration / 4)
    }

    /// The next segment's duration, as predicted.
    private var predictedDuration: Duration { durations.max() ?? targetDuration }

    /// Records a load that began at `start`. `newSegments` are the durations of the segments it found
    /// that the previous load did not list, oldest first (empty: unchanged). `newestEnd`: where the
    /// newest segment's media ends on the source's clock (program date-time + duration), on ours.
    public mutating func loaded(at start: Instant, newSegments: [Duration], newestEnd: Instant? = nil) {
        defer { lastLoad = (start, !newSegments.isEmpty) }
        guard !newSegments.isEmpty else {
            // The next segment was not out when this load began.
            pendingNotBefore = start
            if betOnPromptOrigin { promptOriginRefuted = true; betOnPromptOrigin = false }
            return
        }
        let jitter = Duration.milliseconds(20)
        var low: Instant, high = start
        if let previous = lastLoad, let earliest, let latest {
            // The newest came out the new segments' durations after the previous newest, and after
            // the last load that did not list it.
            // The origin's jitter is not carried from one segment to the next (it would widen the
            // interval for ever); `margin` absorbs it, and a segment later than that is found by
            // the next load, half a target duration on.
            let sum = newSegments.reduce(Duration.zero, +)
            low = max(earliest + sum, pendingNotBefore ?? previous.start, previous.start)
            high = min(latest + sum, start)
            if low >= high {
                // Not when predicted: one late segment keeps the origin's phase (the next is due on
                // time); a second in a row means the phase moved, and only this load's bounds hold.
                conflicts += 1
                if conflicts < 2 {
                    low = earliest + sum
                    high = latest + sum
                } else {
                    low = max(previous.start, pendingNotBefore ?? previous.start)
                    high = start
                    conflicts = 0
                }
            } else {
                conflicts = 0
            }
        } else {
            low = start - (newSegments.last ?? targetDuration)
        }
        record(newSegments)
        // The segment after it was not out when this load began: it came out less than a duration before.
        low = max(low, start - (durations.max() ?? targetDuration) - jitter)
        betOnPromptOrigin = false
        if sourceClockUsable, let end = newestEnd {
            if end > high + jitter {
                // Published before its last picture was taken: the clocks disagree.
                sourceClockUsable = false
            } else {
                // The loads put the publication well after the media's end: not a prompt origin.
                if low > end + lockWidth / 2 { promptOriginRefuted = true }
                // 50 ms of slack for a source clock a little ahead of ours.
                low = max(low, end - .milliseconds(50))
                // Bet while the interval is wider than a lock and nothing contradicts a prompt origin.
                betOnPromptOrigin = high - low > lockWidth && !promptOriginRefuted
            }
        }
        if low >= high { low = high - jitter }
        earliest = low
        latest = high
        pendingNotBefore = nil
    }

    /// A probe that bet on a prompt origin saw nothing new: the origin publishes later than that.
    private var promptOriginRefuted = false

    /// Loads in a row that contradicted the predicted publication.
    private var conflicts = 0
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
    public func nextLoad() -> Instant? { plannedLoad()?.at }

    /// Whether the next load is aimed past the next segment (it lets that one go by, and finds it
    /// together with the one after it).
    public var nextLoadLetsASegmentGoBy: Bool { (plannedLoad()?.segment ?? 1) > 1 }

    /// The next load: when, and which segment to come (1: the next) it is aimed at.
    private func plannedLoad() -> (at: Instant, segment: Int)? {
        guard let floor, let earliest, let latest else { return floor.map { ($0, 1) } }
        let longest = durations.max() ?? targetDuration, shortest = durations.min() ?? targetDuration
        let narrow = (latest + longest) - max(earliest + shortest, pendingNotBefore ?? earliest + shortest) <= lockWidth
        // The k-th segment to come is due within (earliest + k × shortest, latest + k × longest]. Aim at
        // the first one due after the floor: at the end of its interval once the interval is narrow,
        // at its middle (a probe that narrows it) while it is wide. A segment that comes before the
        // floor is let go by; the load after sees it together with the next.
        for k in 1...8 {
            var low = earliest + shortest * k
            if k == 1, let notBefore = pendingNotBefore { low = max(low, notBefore) }
            let high = latest + longest * k
            // Overdue: the next segment is later than predicted; look again as soon as allowed.
            if k == 1, high <= low { return (floor, 1) }
            let aim = narrow ? high + margin : betOnPromptOrigin ? low + lockWidth - margin : low + (high - low) / 2
            if aim >= floor { return (aim, k) }
            // Due a little before the floor (the last load came a few milliseconds after its aim):
            // load at the floor; letting it go by would cost it a whole segment.
            if narrow, floor - high <= rephaseAfter { return (floor, k) }
        }
        return (floor, 8)
    }
}
