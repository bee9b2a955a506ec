import Broadcast
import MediaIO
import Pipeline
import Testing

/// Where a splice lands on the output's tick grid: on the first output picture that shows the
/// splice's source picture or a later one, checked against a brute-force statement of that rule over
/// the display link's own choice of pictures (`FrameSelector`), at the same rate and at a lower one.
struct SpliceTimerTests {
    /// Source pictures every `step` units of 1/90000 s; ticks at `rate`; one cue at `cuePts`.
    /// Returns the tick the cue was placed on and the source picture that tick shows.
    func place(cuePts: Int64, frames: Int, step: Int64, rate: Rational, timing: SourceCue.Timing? = nil) -> (tick: Int64, shownFrame: Int, placed: PlacedSplice)? {
        var selector = FrameSelector<Int>(rate: rate)
        var timer = SpliceTimer(origin: 0, secondsPerUnit: 1.0 / 90000)
        timer.take([SourceCue(id: "break-1", kind: .out, marker: .cueTag(.out(duration: 30)), timing: timing ?? .at(pts: cuePts))])
        var ticks: [FrameSelector<Int>.Tick] = []
        for i in 0..<frames { ticks += selector.offer(i, at: MediaTime(value: Int64(i) * step, numerator: 1, denominator: 90000)) }
        ticks += selector.finish(at: MediaTime(value: Int64(frames) * step, numerator: 1, denominator: 90000))
        for t in ticks {
            let seconds = Double(t.index) * Double(rate.denominator) / Double(rate.numerator)
            if !timer.due(tick: t.index, outputSeconds: seconds, showing: Int64(t.payload) * step, duration: step, isNewFrame: t.isNewFrame).isEmpty {
                return (t.index, t.payload, timer.placed[0])
            }
        }
        return nil
    }

    /// Tick k shows the newest picture at or before k/rate; the splice's tick is the first that shows
    /// picture `target` or a later one (stated without the timer).
    func expectedTick(target: Int, frames: Int, step: Int64, rate: Rational) -> Int64 {
        var k: Int64 = 0
        while true {
            let tickTime = Double(k) * Double(rate.denominator) / Double(rate.numerator)
            let newest = (0..<frames).last { Double(Int64($0) * step) / 90000 <= tickTime + 1e-9 } ?? 0
            if newest >= target { return k }
            k += 1
        }
    }

    @Test("same rate: the splice's own picture, on its own tick", arguments: [0, 1, 97, 239, 299])
    func sameRate(target: Int) throws {
        let step: Int64 = 3000  // 30 fps
        let placed = try #require(place(cuePts: Int64(target) * step, frames: 300, step: step, rate: Rational(30, 1)))
        #expect(placed.shownFrame == target)
        #expect(placed.tick == Int64(target))
        #expect(placed.tick == expectedTick(target: target, frames: 300, step: step, rate: Rational(30, 1)))
    }

    @Test("a splice time rounded a little early still takes its picture, not the one before")
    func roundedEarly() throws {
        let placed = try #require(place(cuePts: 239 * 3000 - 600, frames: 300, step: 3000, rate: Rational(30, 1)))
        #expect(placed.shownFrame == 239)
    }

    @Test("25 fps from 30: the first output picture showing the splice's picture or a later one, within one output frame",
          arguments: [1, 5, 6, 7, 100, 239, 283])
    func lowerRate(target: Int) throws {
        let step: Int64 = 3000
        let rate = Rational(25, 1)
        let placed = try #require(place(cuePts: Int64(target) * step, frames: 300, step: step, rate: rate))
        #expect(placed.tick == expectedTick(target: target, frames: 300, step: step, rate: rate))
        #expect(placed.shownFrame >= target)
        let sourceSeconds = Double(target) / 30, outputSeconds = Double(placed.tick) / 25
        #expect(abs(outputSeconds - sourceSeconds) <= 1.0 / 25 + 1e-9, "\(outputSeconds) s for a splice at \(sourceSeconds) s")
        #expect(placed.placed.sourceSeconds.map { abs($0 - sourceSeconds) < 1e-9 } == true)
    }

    @Test("60 fps from 30: the tick that first shows the picture")
    func higherRate() throws {
        let placed = try #require(place(cuePts: 120 * 3000, frames: 300, step: 3000, rate: Rational(60, 1)))
        #expect(placed.tick == 240)
        #expect(placed.shownFrame == 120)
    }

    @Test("at once: the next tick")
    func immediate() throws {
        let placed = try #require(place(cuePts: 0, frames: 30, step: 3000, rate: Rational(30, 1), timing: .immediate))
        #expect(placed.tick == 0)
        #expect(placed.placed.immediate)
    }

    @Test("a cue past the input's last picture is never placed, and is counted")
    func pastTheEnd() {
        var timer = SpliceTimer(origin: 1000, secondsPerUnit: 1.0 / 90000)
        timer.take([SourceCue(id: "x", kind: .in, marker: .cueTag(.in), timing: .at(pts: 1000 + 90000 * 20))])
        for k in 0..<300 { _ = timer.due(tick: Int64(k), outputSeconds: Double(k) / 30, showing: Int64(k) * 3000, duration: 3000, isNewFrame: true) }
        #expect(timer.unplaced == 1)
        #expect(timer.placed.isEmpty)
    }

    @Test("an OUT and its IN keep their order; a repeated tick places nothing")
    func order() {
        var timer = SpliceTimer(origin: 0, secondsPerUnit: 1.0 / 90000)
        timer.take([SourceCue(id: "b", kind: .in, marker: .cueTag(.in), timing: .at(pts: 60 * 3000)),
                    SourceCue(id: "b", kind: .out, marker: .cueTag(.out(duration: 1)), timing: .at(pts: 30 * 3000))])
        var kinds: [(Int64, SourceCue.Kind)] = []
        for k in 0..<90 {
            // Ticks 30…34 repeat picture 29 (a stalled input); tick k ≥ 35 shows picture k − 5.
            let (frame, new) = k < 30 ? (k, true) : k < 35 ? (29, false) : (k - 5, true)
            for cue in timer.due(tick: Int64(k), outputSeconds: Double(k) / 30, showing: Int64(frame) * 3000, duration: 3000, isNewFrame: new) {
                kinds.append((Int64(k), cue.kind))
            }
        }
        #expect(kinds.map(\.1) == [.out, .in])
        #expect(kinds.map(\.0) == [35, 65])
    }
}

/// `break_auto_return`: a splice insert's break comes back by itself after its `break_duration`.
/// The section is threefive's (scripts/splice-oracle.py insert 21 1 …  3.7): event 21, out of
/// network, auto return, 3.7 s (333 000 ticks).
struct SpliceAutoReturnTests {
    static let out = "0xFC302500000000000000FFF01405000000157FEFFE00099138FE000514C8000701020000F3ADF35C"

    /// Places cues over 300 pictures at 30 fps (3000 units of 1/90000 s each); `(tick, kind)` of each placed.
    func run(_ cues: [(atPicture: Int, cue: SourceCue)]) -> [(Int64, SourceCue.Kind)] {
        var timer = SpliceTimer(origin: 0, secondsPerUnit: 1.0 / 90000)
        var placed: [(Int64, SourceCue.Kind)] = []
        for k in 0..<300 {
            // Each cue reaches the timer a second before its picture, as a TS section does.
            timer.take(cues.filter { $0.atPicture - 30 == k }.map(\.cue))
            for cue in timer.due(tick: Int64(k), outputSeconds: Double(k) / 30, showing: Int64(k) * 3000, duration: 3000, isNewFrame: true) {
                placed.append((Int64(k), cue.kind))
            }
        }
        return placed
    }

    @Test("an OUT with auto return and no IN: its IN is placed 3.7 s (111 pictures) later")
    func returnsByItself() throws {
        let section = try SpliceInfoSection(hex: Self.out)
        let out = SourceCue(id: "SCTE35-21", kind: .out, marker: .scte35(section), timing: .at(pts: 40 * 3000))
        let placed = run([(40, out)])
        #expect(placed.map(\.0) == [40, 151])
        #expect(placed.map(\.1) == [.out, .in])
    }

    @Test("the source's own IN before the duration ends the break there, and no second IN follows")
    func sourceReturnsFirst() throws {
        let section = try SpliceInfoSection(hex: Self.out)
        let out = SourceCue(id: "SCTE35-21", kind: .out, marker: .scte35(section), timing: .at(pts: 40 * 3000))
        let back = SourceCue(id: "SCTE35-21", kind: .in, marker: .cueTag(.in), timing: .at(pts: 100 * 3000))
        let placed = run([(40, out), (100, back)])
        #expect(placed.map(\.0) == [40, 100])
        #expect(placed.map(\.1) == [.out, .in])
    }
}
