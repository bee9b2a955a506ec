/// The output clock: tick k is shown at k / rate seconds, exactly.
public struct TickGrid: Sendable, Equatable, CustomStringConvertible {
    public var rate: Rational

    public init(rate: Rational) {
        precondition(rate.isPositive, "a tick rate must be positive")
        self.rate = rate
    }

    /// The encoder's time base: one unit per tick.
    public var timeBase: Rational { rate.inverse }

    /// Seconds at tick `k` (for display only; schedules compare exact ratios).
    public func seconds(ofTick k: Int64) -> Double { Double(k) * Double(rate.denominator) / Double(rate.numerator) }

    public var description: String { "\(rate) ticks/s" }
}

/// Where HLS segments start, on the tick grid, in exact rational arithmetic.
///
/// Segment j covers [j·D, (j+1)·D) seconds; it starts at the first tick at or after j·D. So a
/// duration that is not a whole number of frames (2 s at 30000/1001) keeps its cuts on the ideal
/// grid, and no rounding can make two writers disagree: the encoder's forced keyframes and the HLS
/// writer's cuts both read this one value.
public struct SegmentSchedule: Sendable, Equatable, CustomStringConvertible {
    public let grid: TickGrid
    /// Segment duration in seconds, exact (2.002 is 1001/500).
    public let duration: Rational

    public init(grid: TickGrid, duration: Rational) {
        precondition(duration.isPositive, "a segment duration must be positive")
        self.grid = grid
        self.duration = duration
    }

    /// A decimal duration such as 2.002 or 6.006 taken exactly (up to six decimals), as users type it.
    public init(grid: TickGrid, seconds: Double) {
        self.init(grid: grid, duration: Rational(Int((seconds * 1_000_000).rounded()), 1_000_000))
    }

    /// The segment that tick `k` falls in: floor(k / rate / duration), exactly.
    public func segment(ofTick k: Int64) -> Int64 {
        // k · (rd / rn) / (dn / dd) = k · rd · dd / (rn · dn)
        let numerator = k.multipliedFullWidth(by: Int64(grid.rate.denominator) * Int64(duration.denominator))
        let denominator = Int64(grid.rate.numerator) * Int64(duration.numerator)
        let (q, r) = denominator.dividingFullWidth(numerator)
        return (r != 0 && (r < 0) != (denominator < 0)) ? q - 1 : q
    }

    /// Whether tick `k` starts a segment (a forced keyframe and a cut).
    public func startsSegment(tick k: Int64) -> Bool {
        k <= 0 || segment(ofTick: k) > segment(ofTick: k - 1)
    }

    /// The first tick of segment `j`: ceil(j · duration · rate).
    public func firstTick(ofSegment j: Int64) -> Int64 {
        let numerator = j.multipliedFullWidth(by: Int64(duration.numerator) * Int64(grid.rate.numerator))
        let denominator = Int64(duration.denominator) * Int64(grid.rate.denominator)
        let (q, r) = denominator.dividingFullWidth(numerator)
        return r > 0 ? q + 1 : q
    }

    /// The most ticks any segment has: ceil(duration · rate) (segments alternate between that and
    /// one fewer when a segment is not a whole number of ticks). The encoder's keyframe interval:
    /// a shorter one would put an unscheduled keyframe just before a cut.
    public var longestSegmentTicks: Int64 { max(1, firstTick(ofSegment: 1)) }

    public var description: String { "segments of \(duration) s on \(grid)" }
}
