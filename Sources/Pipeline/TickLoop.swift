import MediaIO

/// What an input has for the tick loop right now.
public enum TickInputEvent<Payload> {
    /// The next frame in presentation order.
    case frame(Payload, MediaTime)
    /// Nothing yet (a live input waiting for data).
    case notYet
    /// The input has ended; `MediaTime` is the end of its last frame.
    case end(MediaTime)
}

/// Frames for the tick loop. Offline inputs suspend in `poll` until the next frame is decoded;
/// live inputs answer `.notYet` instead of waiting (the clock, not the data, wakes a live loop).
public protocol TickInput<Payload> {
    associatedtype Payload
    mutating func poll() async throws -> TickInputEvent<Payload>
    /// Time of the newest media received (the live edge), or nil for offline inputs.
    var liveEdge: MediaTime? { get }
}

/// What happened on the clock during a run.
public struct TickStatistics: Sendable {
    public var ticks = 0
    public var framesShown = 0
    public var repeatedTicks = 0
    public var droppedFrames = 0
    /// Ticks that started more than one period after their deadline.
    public var lateTicks = 0
    /// Times the loop skipped ahead to stay within the latency bound.
    public var latencySkips = 0
    public var maximumLatency: Duration = .zero
    public var latenessP50: Duration = .zero
    public var latenessP95: Duration = .zero
    public var latenessMax: Duration = .zero
}

/// The display link. A clock ticks at the output rate; at each tick the loop takes the newest frame
/// whose time is ≤ the tick's target time, hands it on if it is new, or repeats the last picture.
///
/// One loop serves every case: offline (a `VirtualClock`, an input that blocks: as fast as the
/// machine goes, same output every run), live (`ContinuousClock`, an input that never blocks), and
/// tests (a `VirtualClock` that the test advances). When a live input runs ahead of the output by
/// more than `maxLatency`, the loop skips forward, dropping frames, so latency stays bounded; when
/// a tick starts late, it repeats the last picture instead of filtering, to catch up.
public struct TickLoop<Payload> {
    public let rate: Rational
    public let maxLatency: Duration?

    public init(rate: Rational, maxLatency: Duration? = nil) {
        self.rate = rate
        self.maxLatency = maxLatency
    }

    public func run<C: Clock, Input: TickInput<Payload>>(
        clock: C, input: inout Input,
        shouldStop: () -> Bool = { false },
        onSkip: (MediaTime) -> Void = { _ in },
        emit: (FrameSelector<Payload>.Tick) async throws -> Void
    ) async throws -> TickStatistics where C.Duration == Duration {
        var selector = FrameSelector<Payload>(rate: rate)
        var stats = TickStatistics()
        var lateness: [Duration] = []
        let period = rate.duration(ofTicks: 1)

        // The clock starts with the first frame: tick 0 shows it.
        var first: (Payload, MediaTime)?
        var ended: MediaTime?
        while first == nil, ended == nil {
            if shouldStop() { return stats }
            switch try await input.poll() {
            case let .frame(payload, time): first = (payload, time)
            // A live input has nothing yet: look again on the next tick of the display link.
            case .notYet: try await clock.sleep(until: clock.now.advanced(by: period), tolerance: nil)
            case let .end(time): ended = time
            }
        }
        guard let (firstPayload, origin) = first else { return stats }
        // Times on the output timeline: input time − origin − skipped.
        var skipped: Int64 = 0
        func shifted(_ t: MediaTime) -> MediaTime {
            MediaTime(value: t.value - origin.value - skipped, numerator: origin.numerator, denominator: origin.denominator)
        }
        var lookahead: (Payload, MediaTime)? = (firstPayload, origin)
        let start = clock.now

        var k: Int64 = 0
        while !shouldStop() {
            let deadline = start.advanced(by: rate.duration(ofTicks: k))
            try await clock.sleep(until: deadline, tolerance: nil)
            let late = deadline.duration(to: clock.now)
            lateness.append(late)
            let target = selector.targetTime(ofTick: k)

            // Take every frame due by this tick; the newest wins.
            polling: while ended == nil {
                if lookahead == nil {
                    switch try await input.poll() {
                    case let .frame(payload, time): lookahead = (payload, time)
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
            if let end = ended, lookahead == nil, !(target < shifted(end)) { break }

            // Stay within the latency bound: skip ahead to the live edge.
            if let maxLatency, let edge = input.liveEdge {
                let behind = shifted(edge).seconds - target.seconds
                let latency = Duration.seconds(max(0, behind))
                if latency > stats.maximumLatency { stats.maximumLatency = latency }
                if latency > maxLatency {
                    let skipSeconds = behind - maxLatency.seconds / 2
                    skipped += Int64((skipSeconds / (Double(origin.numerator) / Double(origin.denominator))).rounded())
                    stats.latencySkips += 1
                    onSkip(MediaTime(value: skipped, numerator: origin.numerator, denominator: origin.denominator))
                }
            }

            let behindSchedule = late > period
            if behindSchedule { stats.lateTicks += 1 }
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
