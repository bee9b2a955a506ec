import MediaIO

/// The display-link rule: an output clock ticks every 1/rate seconds, and tick k shows the newest
/// frame whose time is ≤ k/rate. Frames are offered in presentation order; the selector answers
/// with the ticks that became final, each naming the frame it shows and whether that frame is new
/// (to be filtered) or a repeat (reuse the last filtered picture).
///
/// Pure and clock-free: the offline loop, the live loop and the tests all drive the same logic.
public struct FrameSelector<Payload> {
    public struct Tick {
        /// Output frame number: its timestamp is `index` in a time base of 1/rate.
        public var index: Int64
        /// The tick's target time, `index / rate`.
        public var targetTime: MediaTime
        public var payload: Payload
        /// False when the tick repeats the previous tick's frame.
        public var isNewFrame: Bool
    }

    public let rate: Rational
    public private(set) var nextTickIndex: Int64 = 0
    /// Frames that were replaced by a newer one before any tick showed them.
    public private(set) var droppedFrames = 0
    /// Ticks that showed a frame already shown.
    public private(set) var repeatedTicks = 0
    /// Frames replaced before a shard's first tick (decoded from the keyframe to reach it).
    public private(set) var prerollFrames = 0
    private let firstTick: Int64
    private var held: (payload: Payload, time: MediaTime, shown: Bool)?
    private var lastShown: Payload?

    /// - Parameter firstTick: the first tick to emit (a shard's; 0 for a whole run).
    public init(rate: Rational, firstTick: Int64 = 0) {
        precondition(rate.isPositive, "tick rate must be positive")
        self.rate = rate
        self.firstTick = firstTick
        nextTickIndex = firstTick
    }

    public func targetTime(ofTick index: Int64) -> MediaTime {
        MediaTime(value: index, numerator: Int64(rate.denominator), denominator: Int64(rate.numerator))
    }

    /// Offers the next frame; returns the ticks whose frame is now decided.
    public mutating func offer(_ payload: Payload, at time: MediaTime) -> [Tick] {
        guard held != nil else {
            // The first frame also covers ticks before it: the picture is held backwards.
            held = (payload, time, false)
            return []
        }
        let ticks = emitTicks(before: time)
        if !held!.shown {
            if firstTick > 0, nextTickIndex == firstTick { prerollFrames += 1 } else { droppedFrames += 1 }
        }
        held = (payload, time, false)
        return ticks
    }

    /// Emits every tick up to and including `index` with the held frame. The caller has offered
    /// every frame whose time is ≤ that tick's target (the live loop polls its input first).
    /// With `deferNewFrame`, a held frame not yet shown is not shown now: the tick repeats the
    /// previous picture (a late display link skips work to catch up) and the frame waits.
    public mutating func advance(through index: Int64, deferNewFrame: Bool = false) -> [Tick] {
        guard held != nil else { return [] }
        var ticks: [Tick] = []
        while nextTickIndex <= index {
            if deferNewFrame, !held!.shown, let last = lastShown {
                repeatedTicks += 1
                ticks.append(Tick(index: nextTickIndex, targetTime: targetTime(ofTick: nextTickIndex), payload: last, isNewFrame: false))
                nextTickIndex += 1
            } else {
                ticks += emitOne()
            }
        }
        return ticks
    }

    /// Ends without more ticks: a held frame that no tick showed counts as dropped.
    public mutating func discardHeldFrame() {
        if let h = held, !h.shown { droppedFrames += 1 }
        held = nil
    }

    /// Whether a frame is held (at least one frame was offered and the stream has not finished).
    public var hasFrame: Bool { held != nil }

    /// Ends the stream at `endTime` (the last frame's time plus its duration); returns the last ticks.
    public mutating func finish(at endTime: MediaTime) -> [Tick] {
        guard held != nil else { return [] }
        var ticks = emitTicks(before: endTime)
        // A stream shorter than one tick still yields one frame.
        if nextTickIndex == firstTick { ticks = emitOne() }
        if !held!.shown { droppedFrames += 1 }
        held = nil
        return ticks
    }

    /// Ticks strictly before `time` show the held frame (a frame exactly at a tick's time belongs to it).
    private mutating func emitTicks(before time: MediaTime) -> [Tick] {
        var ticks: [Tick] = []
        while targetTime(ofTick: nextTickIndex) < time {
            ticks += emitOne()
        }
        return ticks
    }

    private mutating func emitOne() -> [Tick] {
        let isNew = !held!.shown
        if !isNew { repeatedTicks += 1 }
        held!.shown = true
        lastShown = held!.payload
        defer { nextTickIndex += 1 }
        return [Tick(index: nextTickIndex, targetTime: targetTime(ofTick: nextTickIndex), payload: held!.payload, isNewFrame: isNew)]
    }
}
