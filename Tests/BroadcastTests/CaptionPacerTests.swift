import Broadcast
import Foundation
import Testing

/// The caption pacer's promises, on caption streams built here from A/53's and CEA-608's rules (not
/// from the code under test): every byte pair and DTVCC triplet of the source leaves exactly once and
/// in order, whatever the display link does (repeat, leave out, change the rate), with at most one
/// 608 pair per field and at most `cc_count` triplets per output picture, and soon after its picture.
@Suite("A/53 caption pacing")
struct CaptionPacerTests {
    /// A source picture's caption data: a 608 field-1 pair on `density` of the pictures (else a
    /// padding pair), a field-2 pair every 10th, and a 4-triplet DTVCC packet every 5th, as a
    /// caption inserter writes them (padding included, as real streams carry).
    static func source(pictures: Int, density: Double = 0.5) -> [[UInt8]] {
        // Seeded: the same stream every run (a random walk near capacity has a random worst delay).
        var generator = SplitMix64(seed: 46)
        var counter: UInt8 = 0
        func next() -> UInt8 { counter &+= 1; return counter | 0x01 }  // non-zero, so never padding
        return (0..<pictures).map { index in
            var triplets: [CaptionTriplet] = []
            let speaks = Double.random(in: 0..<1, using: &generator) < density
            triplets.append(speaks ? CaptionTriplet(header: 0xFC, data1: next(), data2: next()) : CaptionTriplet(header: 0xFC, data1: 0x80, data2: 0x80))
            triplets.append(index % 10 == 0 ? CaptionTriplet(header: 0xFD, data1: next(), data2: next()) : CaptionTriplet(header: 0xF9, data1: 0, data2: 0))
            if index % 5 == 0 {
                triplets.append(CaptionTriplet(header: 0xFF, data1: next(), data2: next()))
                for _ in 0..<3 { triplets.append(CaptionTriplet(header: 0xFE, data1: next(), data2: next())) }
            }
            triplets.append(CaptionTriplet(header: 0xFA, data1: 0, data2: 0))  // cc_valid 0: padding
            return CaptionTriplet.join(triplets)
        }
    }

    /// What a decoder must get: the valid, non-padding triplets of each kind, in order.
    static func meaningful(_ pictures: [[UInt8]]) -> [UInt8: [CaptionTriplet]] {
        Dictionary(grouping: pictures.flatMap { CaptionTriplet.split($0) }.filter { !$0.isPadding }, by: { min($0.type, 2) })
    }

    /// Runs `source` through a pacer as the display link would: output picture k shows the newest
    /// source picture at or before k / outRate; every source picture up to it is appended first.
    static func paced(_ source: [[UInt8]], inRate: Double, outRate: Double) -> (out: [[UInt8]], delays: [Double], pacer: CaptionPacer) {
        var pacer = CaptionPacer(outputRate: outRate)
        var out: [[UInt8]] = [], appended = 0
        // Each kind's source times in order: the pacer keeps order, so the n-th out is the n-th in.
        var times: [UInt8: [Double]] = [:], delays: [Double] = []
        let end = Int((Double(source.count) / inRate + 3) * outRate)
        for k in 0..<end {
            let time = Double(k) / outRate
            // Every source picture up to the one shown is appended, shown or left out.
            while appended < source.count, Double(appended) / inRate <= time + 1e-9 {
                for t in CaptionTriplet.split(source[appended]) where !t.isPadding { times[min(t.type, 2), default: []].append(Double(appended) / inRate) }
                pacer.append(sourcePicture: source[appended])
                appended += 1
            }
            let bytes = pacer.nextPicture()
            for t in CaptionTriplet.split(bytes) {
                let kind = min(t.type, 2)
                if let first = times[kind]?.first { delays.append(time - first); times[kind]?.removeFirst() }
            }
            out.append(bytes)
        }
        return (out, delays, pacer)
    }

    static func check(_ source: [[UInt8]], _ result: (out: [[UInt8]], delays: [Double], pacer: CaptionPacer), outRate: Double,
                      maxDelay: Double, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(meaningful(result.out) == meaningful(source), "every triplet once, in order", sourceLocation: sourceLocation)
        for picture in result.out {
            let triplets = CaptionTriplet.split(picture)
            #expect(triplets.filter { $0.type == 0 }.count <= 1 && triplets.filter { $0.type == 1 }.count <= 1, sourceLocation: sourceLocation)
            #expect(triplets.count <= result.pacer.capacity, sourceLocation: sourceLocation)
        }
        let worst = result.delays.max() ?? 0
        #expect(worst <= maxDelay, "a triplet left \(worst) s after its picture", sourceLocation: sourceLocation)
        #expect(result.pacer.dropped == 0 && result.pacer.backlog == 0, sourceLocation: sourceLocation)
    }

    @Test("A/53's cc_count per picture at the output's rate")
    func capacity() {
        #expect(CaptionPacer(outputRate: 30000.0 / 1001).capacity == 20)
        #expect(CaptionPacer(outputRate: 30).capacity == 20)
        #expect(CaptionPacer(outputRate: 60000.0 / 1001).capacity == 10)
        #expect(CaptionPacer(outputRate: 25).capacity == 24)
        #expect(CaptionPacer(outputRate: 24000.0 / 1001).capacity == 25)
    }

    @Test("same rate: each picture carries its own source picture's captions")
    func sameRate() {
        let source = Self.source(pictures: 300)
        let result = Self.paced(source, inRate: 30, outRate: 30)
        Self.check(source, result, outRate: 30, maxDelay: 0.001)
    }

    @Test("a repeated picture does not repeat its captions (30 → 60)")
    func repeats() {
        let source = Self.source(pictures: 300)
        let result = Self.paced(source, inRate: 30, outRate: 60)
        Self.check(source, result, outRate: 60, maxDelay: 1.0 / 30)
    }

    @Test("pictures left out keep their captions: carried to the next shown picture (60 → 30)")
    func leftOut() {
        // Overload shedding is the same to the pacer: a tick that repeats a picture takes the captions
        // of every source picture passed since, as a tick here does of the one it skipped.
        let source = Self.source(pictures: 600, density: 0.4)
        Self.check(source, Self.paced(source, inRate: 60, outRate: 30), outRate: 30, maxDelay: 0.2)
    }

    @Test("--fps 25 from 30: re-paced, within 3 output pictures at half of 608's capacity")
    func rateChange() {
        let source = Self.source(pictures: 900, density: 0.5)
        Self.check(source, Self.paced(source, inRate: 30, outRate: 25), outRate: 25, maxDelay: 3.0 / 25)
    }

    @Test("a source that sends more than the output can carry for minutes loses the oldest, counted")
    func overflow() {
        var pacer = CaptionPacer(outputRate: 1)
        for _ in 0..<2000 { pacer.append(sourcePicture: [0xFC, 0x41, 0x42]) }
        #expect(pacer.dropped == 2000 - 600 && pacer.backlog == 600)
        #expect(pacer.bytesIn == 6000)
    }
}

/// A small seeded generator (SplitMix64), so a test's "random" source is the same every run.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
