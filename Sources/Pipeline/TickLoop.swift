import MediaIO

/// What an input has for the tick loop right now.
public enum TickInputEvent<Payload> {
    /// The next frame in presentation order.
    case frame(Payload, MediaTime)
    /// Nothing yet (a live input waiting for data).
    case notYet
    /// The input has ended; `MediaTime` is the end of its last frame.
    case end(MediaTime)
    /// The first frame after the input was lost (`--on-input-loss hold|slate`): it shows at the
    /// current tick, and the input's timeline is mapped on from there (the output's goes on).
    case resume(Payload, MediaTime)
}

/// Frames for the tick loop. Offline inputs suspend in `poll` until the next frame is decoded;
/// live inputs answer `.notYet` instead, and the loop then suspends in `wait(until:on:)`, which
/// returns when the input has news or the tick's deadline comes: woken by the event or the clock,
/// never by a timer that looks again.
public protocol TickInput<Payload> {
    associatedtype Payload
    mutating func poll() async throws -> TickInputEvent<Payload>
    /// Suspends until `poll` may answer something other than `.notYet` (a frame decoded, the end,
    /// a stall to report) or until `deadline` on `clock`, whichever comes first. A nil deadline
    /// (the first frame, before the clock has started) waits for the input alone. Called only
    /// after `poll` answered `.notYet`.
    mutating func wait<C: Clock>(until deadline: C.Instant?, on clock: C) async throws where C.Duration == Duration
    /// Time of the newest media received (the live edge), or nil for offline inputs.
    var liveEdge: MediaTime? { get }
    /// A live input: a tick whose picture is already decided runs at once, ahead of its deadline,
    /// so a run that joins behind the live edge catches up; an undecided tick waits for its frame
    /// until its deadline. Offline inputs (false) keep to the clock.
    var runsAheadOfClock: Bool { get }
    /// The earliest time the next frame can have (the end of the last frame polled), when known:
    /// it decides the last tick before a gap in delivery (a segment's end) without waiting for
    /// the next segment.
    var nextFrameNotBefore: MediaTime? { get }
    /// Whether media has been received that is not yet offered as frames (packets queued for the
    /// decoder): a live tick waiting then waits for the decoder, not for the input's delivery.
    var hasBacklog: Bool { get }
}

extension TickInput {
    public var runsAheadOfClock: Bool { false }
    public var nextFrameNotBefore: MediaTime? { nil }
    public var hasBacklog: Bool { false }
}

/// What happened on the clock during a run.
public struct TickStatistics: Sendable {
    public var ticks = 0
    public var framesShown = 0
    public var repeatedTicks = 0
    public var droppedFrames = 0
    /// Frames decoded before a shard's first tick, only to reach its first picture.
    public var prerollFrames = 0
    /// Ticks that started more than one period after their deadline.
    public var lateTicks = 0
    /// Times the loop skipped ahead to stay within the latency bound.
    public var latencySkips = 0
    /// A live run: the wall time from its first frame until it had worked through the frames that
    /// were waiting (it first waited for a frame), or nil if it never did.
    public var caughtUpAfter: Duration?
    public var maximumLatency: Duration = .zero
    public var latenessP50: Duration = .zero
    public var latenessP95: Duration = .zero
    public var latenessMax: Duration = .zero
}

/// Part of the output timeline, for one shard of a job split across machines: the input time of
/// tick 0 (the whole input's first frame, not this shard's) and the ticks to make.
public struct TickWindow: Sendable, Equatable {
    public var origin: MediaTime
    public var firstTick: Int64
    /// Exclusive; nil runs to the end of the input.
    public var endTick: Int64?

    public init(origin: MediaTime, firstTick: Int64, endTick: Int64?) {
        (self.origin, self.firstTick, self.endTick) = (origin, firstTick, endTick)
    }
}

/// A shard's first frame came after its first tick: the reading did not start early enough.
public struct TickWindowLate: Error, Sendable {
    public var firstTick: Int64
    public var firstFrame: MediaTime
}

/// The display link. A clock ticks at the output rate; at each tick the loop takes the newest frame
/// whose time is ≤ the tick's target time, hands it on if it is new, or repeats the last picture.
///
/// One loop serves every case: offline (a `VirtualClock`, an input that blocks: as fast as the
/// machine goes, same output every run), live (`ContinuousClock`, an input that never blocks), and
/// tests (a `VirtualClock` that the test advances). Tick k's deadline is k periods after the first
/// frame. A live tick runs as soon as its picture is decided (a later frame has arrived), even
/// before its deadline: a run that joins a few segments behind the live edge works through them
/// faster than real time and then keeps pace with the segments as they arrive, so latency is the
/// input's own delivery plus the work, not the join distance. A tick whose frame has not arrived by
/// its deadline shows the last picture (a stall repeats, it does not stop the output). When a live
/// input is ahead of the output by more than `maxLatency`, the loop skips forward, dropping frames;
/// when a tick starts late, it repeats the last picture instead of filtering, to catch up.
public struct TickLoop<Payload> {
    public let rate: Rational
    public let maxLatency: Duration?
    /// A run that joined behind the live edge stops catching up after this long at the latest
    /// (the plan's `LiveSpec.catchUpBound`); nil: the latency bound. Without either, no tick is
    /// treated as catching up.
    public let catchUpBound: Duration?

    public init(rate: Rational, maxLatency: Duration? = nil, catchUpBound: Duration? = nil) {
        self.rate = rate
        self.maxLatency = maxLatency
        self.catchUpBound = catchUpBound
    }

    /// - Parameter window: make only these ticks, on the whole input's timeline (a shard). The
    ///   input starts at a keyframe at or before the first tick's frame; earlier frames are pre-roll.
    public func run<C: Clock, Input: TickInput<Payload>>(
        clock: C, input: inout Input,
        window: TickWindow? = nil,
        resumeDelay: Duration = .zero,
        startDelay: Duration = .zero,
        timestampSlack: Int64 = 0,
        waitBudget: Duration? = nil,
        observe: (_ behind: Double?, _ idle: Duration) -> Void = { _, _ in },
        shouldStop: () -> Bool = { false },
        onSkip: (MediaTime) -> Void = { _ in },
        onResume: (MediaTime) -> Void = { _ in },
        emit: (FrameSelector<Payload>.Tick) async throws -> Void
    ) async throws -> TickStatistics where C.Duration == Duration {
        let firstTick = window?.firstTick ?? 0
        var selector = FrameSelector<Payload>(rate: rate, firstTick: firstTick)
        var stats = TickStatistics()
        var lateness: [Duration] = []
        let period = rate.duration(ofTicks: 1)

        // The clock starts with the first frame: tick 0 shows it.
        var first: (Payload, MediaTime)?
        var ended: MediaTime?
        while first == nil, ended == nil {
            if shouldStop() { return stats }
            switch try await input.poll() {
            case let .frame(payload, time), let .resume(payload, time): first = (payload, time)
            // A live input has nothing yet: the clock starts with its first frame.
            case .notYet: try await input.wait(until: nil as C.Instant?, on: clock)
            case let .end(time): ended = time
            }
        }
        guard let (firstPayload, firstTime) = first else { return stats }
        let origin = window?.origin ?? firstTime
        // Times on the output timeline: input time − origin − skipped.
        var skipped: Int64 = 0
        // A live input's timestamps may be rounded to their time base (RTMP's milliseconds put a
        // 30 fps frame 0.33 ms after its tick): `timestampSlack` units earlier still count as on time.
        func shifted(_ t: MediaTime) -> MediaTime {
            MediaTime(value: t.value - origin.value - skipped - timestampSlack, numerator: origin.numerator, denominator: origin.denominator)
        }
        // A shard's reading starts at a keyframe at or before its first tick's picture; a later
        // first frame would put another picture on that tick than the whole run shows.
        if let window, selector.targetTime(ofTick: window.firstTick) < shifted(firstTime) {
            throw TickWindowLate(firstTick: window.firstTick, firstFrame: shifted(firstTime))
        }
        var lookahead: (Payload, MediaTime)? = (firstPayload, firstTime)
        let start = clock.now
        /// Tick k's deadline is k periods after this (the first frame's arrival, or where a live
        /// run's clock was re-anchored after catching up).
        var anchor = start.advanced(by: startDelay)

        /// Offers every frame due by `target` (the newest wins); true once the tick's picture is
        /// decided: a later frame is here, or the input has ended.
        func gather(upTo target: MediaTime) async throws -> Bool {
            polling: while ended == nil {
                if lookahead == nil {
                    switch try await input.poll() {
                    case let .frame(payload, time): lookahead = (payload, time)
                    case let .resume(payload, time):
                        // Back after a loss: this frame is the tick's, whatever its timestamp says
                        // (an origin or publisher that restarted has a new clock). Later frames
                        // keep their distance from it.
                        let unit = Double(origin.numerator) / Double(origin.denominator)
                        let targetUnits = Int64(((target.seconds + resumeDelay.seconds) / unit).rounded(.down))
                        skipped = time.value - origin.value - targetUnits
                        onResume(MediaTime(value: skipped, numerator: origin.numerator, denominator: origin.denominator))
                        lookahead = (payload, time)
                    case .notYet: break polling
                    case let .end(time): ended = time
                    }
                }
                guard let (payload, time) = lookahead, shifted(time) <= target else { break }
                _ = selector.offer(payload, at: shifted(time))
                lookahead = nil
            }
            if ended != nil, let (payload, time) = lookahead, shifted(time) <= target {
                _ = selector.offer(payload, at: shifted(time))
                lookahead = nil
            }
            if ended != nil || lookahead != nil { return true }
            return input.nextFrameNotBefore.map { target < shifted($0) } ?? false
        }
        // A live run joins behind the edge with frames waiting. While it works through them its
        // ticks are not late even when behind their deadlines (which count from the first frame's
        // arrival, before the encoder and the other stages have warmed up): shedding work then
        // would repeat pictures that are already here. Catching up ends when a tick first waits for
        // the input's delivery (nothing left for the decoder), or after the latency bound's time;
        // then a run still behind its deadlines has its clock re-anchored where it is, so it is
        // late from there on only if it falls further behind (a machine too slow to keep pace).
        let bound = catchUpBound ?? maxLatency
        var catchingUp = input.runsAheadOfClock && bound != nil
        let catchUpEnds = start.advanced(by: bound ?? .zero)

        var k = firstTick
        while !shouldStop() {
            if let end = window?.endTick, k >= end { break }
            var deadline = anchor.advanced(by: rate.duration(ofTicks: k - firstTick))
            let target = selector.targetTime(ofTick: k)
            /// How far the tick is behind the newest media read (nil before any is known).
            func behindEdge() -> Double? { input.liveEdge.map { shifted($0).seconds - target.seconds } }
            var idle = Duration.zero
            if input.runsAheadOfClock {
                var waited = false
                var idleSince: C.Instant?
                // While catching up, a frame the decoder is still working on is waited for past
                // the deadline: it is already here, so showing the last picture again would be a
                // repeat for nothing. Not past the catch-up's end: a backlog that does not drain
                // (packets for a stalled audio path) must not hold the clock.
                while !(try await gather(upTo: target)), !shouldStop() {
                    let backlog = input.hasBacklog
                    if backlog { idleSince = nil } else if idleSince == nil { idleSince = clock.now }
                    var waitsForDecoder = catchingUp && backlog && clock.now < catchUpEnds
                    // `--overload adapt`: a frame already read is waited for while the run is within
                    // the budget behind the edge: shown late, not repeated over and dropped after.
                    let withinBudget = waitBudget.map { budget in backlog && (behindEdge() ?? 0) < budget.seconds } ?? false
                    if withinBudget { waitsForDecoder = true }
                    guard clock.now < deadline || waitsForDecoder else { break }
                    // Woken by the input's news, or by the deadline (then the guard above decides).
                    let waitStart = clock.now
                    let until = withinBudget ? max(deadline, clock.now.advanced(by: period)) : waitsForDecoder ? max(deadline, catchUpEnds) : deadline
                    try await input.wait(until: until, on: clock)
                    if !backlog { idle += waitStart.duration(to: clock.now) }
                    // Waiting a period for the input's next delivery, with nothing left for the
                    // decoder, is being at the edge (a gap between two reads is shorter).
                    if !backlog, let since = idleSince, since.duration(to: clock.now) >= period { waited = true }
                }
                if catchingUp, waited || clock.now >= catchUpEnds {
                    catchingUp = false
                    if waited {
                        stats.caughtUpAfter = start.duration(to: clock.now)
                    } else if deadline < clock.now {
                        // Still working through the backlog after the latency bound's time: the
                        // clock starts again at this tick, so from here a run that keeps pace is
                        // on time and one that cannot is late.
                        anchor = anchor.advanced(by: deadline.duration(to: clock.now))
                        deadline = clock.now
                    }
                }
            } else {
                try await clock.sleep(until: deadline, tolerance: nil)
                _ = try await gather(upTo: target)
            }
            let late = catchingUp ? .zero : max(.zero, deadline.duration(to: clock.now))
            lateness.append(late)
            if let end = ended, lookahead == nil, !(target < shifted(end)) { break }

            // Stay within the latency bound: skip ahead to the live edge.
            if let maxLatency, let edge = input.liveEdge {
                let behind = shifted(edge).seconds - target.seconds
                let latency = Duration.seconds(max(0, behind))
                if latency > stats.maximumLatency { stats.maximumLatency = latency }
                if latency > maxLatency {
                    // A whole number of periods, so frames keep their phase against the ticks
                    // (an odd skip would put each frame just after its tick: a repeat and a drop
                    // every few ticks).
                    let skipTicks = ((behind - maxLatency.seconds / 2) * rate.doubleValue).rounded()
                    let skipSeconds = skipTicks / rate.doubleValue
                    skipped += Int64((skipSeconds / (Double(origin.numerator) / Double(origin.denominator))).rounded())
                    stats.latencySkips += 1
                    onSkip(MediaTime(value: skipped, numerator: origin.numerator, denominator: origin.denominator))
                }
            }

            let behind = behindEdge()
            observe(behind, idle)
            // A tick that starts a period late repeats the last picture to catch up (the frame
            // waits and is likely dropped by the next: a burst). Not under `--overload adapt`:
            // there the controller sheds, evenly; a late tick is one past the budget.
            let behindSchedule = waitBudget == nil && late > period
            if waitBudget.map({ !catchingUp && (behind ?? 0) > $0.seconds }) ?? behindSchedule { stats.lateTicks += 1 }
            for tick in selector.advance(through: k, deferNewFrame: behindSchedule) {
                stats.ticks += 1
                if tick.isNewFrame { stats.framesShown += 1 }
                try await emit(tick)
            }
            k += 1
        }
        if lookahead != nil { _ = selector.offer(lookahead!.0, at: shifted(lookahead!.1)) }
        selector.discardHeldFrame()
        stats.repeatedTicks = selector.repeatedTicks
        stats.droppedFrames = selector.droppedFrames
        stats.prerollFrames = selector.prerollFrames
        lateness.sort()
        if !lateness.isEmpty {
            stats.latenessP50 = lateness[lateness.count / 2]
            stats.latenessP95 = lateness[min(lateness.count - 1, lateness.count * 95 / 100)]
            stats.latenessMax = lateness.last!
        }
        return stats
    }
}

extension Duration {
    var seconds: Double {
        let c = components
        return Double(c.seconds) + Double(c.attoseconds) / 1e18
    }
}
