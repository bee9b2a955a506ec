import HLSClient
import Testing

/// `ReloadSchedule` against a simulated origin that publishes a segment every `period` seconds at
/// some phase (plus jitter): every load the schedule asks for obeys RFC 8216 §6.3.4's floors, and
/// once the phase is found every segment is seen within a quarter second of its publication.
@Suite("reload on time")
struct ReloadScheduleTests {
    struct Run {
        var loads: [(time: Double, changed: Bool)] = []
        /// For each segment published after the client started: load that first saw it − publication.
        var delays: [Double] = []
    }

    /// - Parameter mediaEndBefore: the playlist has program date-times, and a segment's media ends
    ///   this long before its publication on the client's clock (nil: no date-times).
    static func simulate(phase: Double, period: Double = 2, target: Int = 2, jitter: [Double] = [0], seconds: Double = 120,
                         latency: Int64 = 1, lateness: [Int64] = [], mediaEndBefore: Double? = nil) -> Run {
        let origin = ContinuousClock.now
        func instant(_ t: Double) -> ContinuousClock.Instant { origin + .milliseconds(Int64((t * 1000).rounded())) }
        func elapsed(_ i: ContinuousClock.Instant) -> Double {
            let d = i - origin
            return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
        }
        // Segment n is published at phase + n × period (+ jitter), with duration `period`.
        let count = Int(seconds / period) + 4
        var published: [Double] = []
        for n in 0..<count {
            let start: Double = phase + Double(n) * period
            published.append(start + jitter[n % jitter.count])
        }
        var schedule = ReloadSchedule(targetDuration: .seconds(target))
        var run = Run()
        var t = 10.0
        var seen = published.filter { $0 <= t }.count
        // The source's clock: segment n's media ends `mediaEndBefore` before it is due (without the jitter).
        func newestEnd(_ seen: Int) -> ContinuousClock.Instant? {
            mediaEndBefore.map { instant(phase + Double(seen - 1) * period - $0) }
        }
        schedule.loaded(at: instant(t), newSegments: [.seconds(period)], newestEnd: newestEnd(seen))
        run.loads.append((t, true))
        while t < seconds {
            // A load begins a few milliseconds after it was asked for (a timer, a thread to wake).
            guard let asked = schedule.nextLoad() else { break }
            let next = asked + .milliseconds(latency + (lateness.isEmpty ? 0 : lateness[run.loads.count % lateness.count]))
            t = elapsed(next)
            let now = published.filter { $0 <= t }.count
            let new = now - seen
            for n in seen..<now { run.delays.append(t - published[n]) }
            seen = now
            schedule.loaded(at: next, newSegments: Array(repeating: .seconds(period), count: new), newestEnd: new > 0 ? newestEnd(now) : nil)
            run.loads.append((t, new > 0))
        }
        return run
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }

    @Test("the RFC's floors: a target duration after a change, half of it after none", arguments: [0.0, 0.3, 0.77, 1.2, 1.99])
    func floors(phase: Double) {
        for mediaEndBefore in [nil, 0.0, 0.6, -4.0] as [Double?] {
            let run = Self.simulate(phase: phase, jitter: [0, 0.03, -0.02, 0.05], mediaEndBefore: mediaEndBefore)
            for (previous, load) in zip(run.loads, run.loads.dropFirst()) {
                let floor = previous.changed ? 2.0 : 1.0
                #expect(load.time - previous.time >= floor - 1e-9, "\(String(describing: mediaEndBefore)): \(previous) → \(load)")
            }
        }
    }

    /// Segments seen more than `bound` after their publication, from the first load on.
    static func late(_ run: Run, bound: Double = 0.25) -> Int { run.delays.filter { $0 > bound }.count }

    @Test("program date-times of a prompt origin (media end + 0.03 s): the phase in one probe, one segment late at most",
          arguments: [0.1, 0.3, 0.77, 1.2, 1.99])
    func sourceClockOfAPromptOrigin(phase: Double) {
        let run = Self.simulate(phase: phase, jitter: [0.03, 0.04, 0.02, 0.03], mediaEndBefore: 0)
        let without = Self.simulate(phase: phase, jitter: [0.03, 0.04, 0.02, 0.03])
        #expect(Self.late(run) <= 1, "delays \(run.delays.map { ($0 * 1000).rounded() })")
        #expect(Self.late(run) <= Self.late(without), "with \(run.delays), without \(without.delays)")
        #expect(Self.percentile(Array(run.delays.dropFirst(2)), 0.95) <= 0.25, "\(run.delays)")
    }

    @Test("program date-times of a slow origin (0.9 s after the media's end), of a clock 4 s ahead, of stale dates: the search as without, no worse",
          arguments: [0.9, -4.0, 300.0])
    func sourceClockThatDoesNotHelp(mediaEndBefore: Double) {
        for phase in [0.1, 0.77, 1.5] {
            let run = Self.simulate(phase: phase, jitter: [0, 0.03, -0.02, 0.01], mediaEndBefore: mediaEndBefore)
            let without = Self.simulate(phase: phase, jitter: [0, 0.03, -0.02, 0.01])
            #expect(Self.percentile(Array(run.delays.dropFirst(8)), 0.95) <= 0.25, "\(phase): \(run.delays)")
            #expect(Self.late(run) <= Self.late(without) + 1, "\(phase): with \(run.delays), without \(without.delays)")
            #expect(run.delays.allSatisfy { $0 < 3.1 }, "\(run.delays)")
        }
    }

    @Test("steady state: each segment seen within 0.25 s of its publication (p95)", arguments: [0.0, 0.3, 0.77, 1.2, 1.99])
    func phaseLock(phase: Double) {
        let run = Self.simulate(phase: phase, jitter: [0, 0.03, -0.02, 0.01])
        let steady = Array(run.delays.dropFirst(8))
        #expect(steady.count > 40)
        #expect(Self.percentile(steady, 0.95) <= 0.25, "delays \(steady.map { ($0 * 1000).rounded() })")
        // Finding the phase lets a few segments go by (one target duration late, plus half the interval).
        #expect(run.delays.allSatisfy { $0 < 3.1 }, "\(run.delays)")
        // Each load starts a little after it was asked for and the floor counts from the start, so
        // the phase creeps later; past `rephaseAfter` one segment is let go by to get it back.
        #expect(run.delays.dropFirst(8).filter { $0 > 0.3 }.count <= 2, "\(run.delays)")
    }

    @Test("a loaded machine: loads start late now and then, the phase creeps; a segment is let go by only every few minutes")
    func loadedMachine() {
        // Load starts late by these milliseconds in turn (measured under three overloaded streams:
        // mostly under 1 ms, now and then tens): ~7 ms a load, each moving every later floor.
        let lateness: [Int64] = [0, 0, 7, 0, 0, 0, 34, 0, 0, 1, 0, 0, 18, 0, 81, 0, 0, 2, 0, 0]
        for phase in [0.1, 0.77, 1.6] {
            let run = Self.simulate(phase: phase, jitter: [0, 0.003, 0.001, 0.002], seconds: 400, lateness: lateness, mediaEndBefore: 0)
            let steady = Array(run.delays.dropFirst(2))
            let letGo = steady.filter { $0 > 1 }
            // ~0.35 s of creep at ~7 ms a load: one in every ~60 segments (bearing 150 ms, one in 20).
            #expect(letGo.count >= 1 && letGo.count <= steady.count / 50, "\(phase): \(steady)")
            // The rest: the lock (~0.15 s), plus the creep borne (a quarter of the target duration).
            #expect(steady.filter { $0 <= 1 }.allSatisfy { $0 <= 0.15 + 0.5 + 0.1 }, "\(phase): \(steady)")
        }
    }

    @Test("joining: a first load just after a publication aims at the next segment; later in the period it lets that one go by (the reader then joins at the next load's edge)")
    func joinPhase() {
        let start = ContinuousClock.now
        for (publishedAgo, letsGo) in [(0.02, false), (0.1, false), (0.6, true), (1.9, true)] {
            var schedule = ReloadSchedule(targetDuration: .seconds(2))
            // A prompt origin: the newest segment's media ended when it was published.
            schedule.loaded(at: start, newSegments: [.seconds(2)], newestEnd: start - .milliseconds(Int64(publishedAgo * 1000)))
            #expect(schedule.nextLoadLetsASegmentGoBy == letsGo, "published \(publishedAgo) s before the first load")
            #expect(schedule.nextLoad()! >= start + .seconds(2))
        }
    }

    @Test("a segment that comes late costs a few segments' delay, then the phase is back")
    func lateSegment() {
        // Every tenth segment 0.4 s late. The RFC's floors make its neighbours pay too: it is looked
        // for again half a target duration after it was due, and the load after must wait a whole
        // one, so one segment is let go by to get back in phase.
        let run = Self.simulate(phase: 0.5, jitter: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0.4], seconds: 240)
        let steady = Array(run.delays.dropFirst(8))
        #expect(Self.percentile(steady, 0.5) <= 0.1, "\(steady)")
        #expect(steady.max()! <= 2.1, "\(steady)")
        #expect(steady.filter { $0 > 0.25 }.count <= steady.count * 3 / 10, "\(steady)")
    }
}
