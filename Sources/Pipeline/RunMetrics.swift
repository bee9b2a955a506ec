import Dispatch
import Foundation
import Metrics
import MediaIO
import Synchronization

/// A run's numbers for operators, recorded through swift-metrics: the application chooses the
/// backend (`livefilter run --serve` exposes Prometheus text at /metrics); with none installed
/// they cost a no-op call. Names are Prometheus-style, prefixed `livefilter_`. Counters advance
/// from the job's progress snapshots (every 250 ms and at the end), so they add nothing per frame;
/// latency is recorded per output segment.
final class RunMetrics: @unchecked Sendable {
    private let dimensions: [(String, String)]
    private let framesIn, framesOut, ticks, repeated, dropped, stalls, bytes, segments: Counter
    private let finished, speed, latency: Gauge
    private let latencyHistogram: Metrics.Timer
    private let parts: Counter
    private let partLatency: Metrics.Timer
    private let losses: Counter
    private let lossSeconds: FloatingPointCounter
    private let inputLost: Gauge
    private let overload: Gauge
    private let overloadChanges, ticksShed, presetChanges, notDecoded: Counter
    /// Closed-caption bytes carried in and written out, triplets the pacer dropped.
    private let captionBytesIn, captionBytesOut, captionTripletsDropped: Counter
    /// Ad markers placed on output ticks, and those of them that came after their picture.
    private let splices, splicesLate: Counter
    private var stageSeconds: [StageTimings.Stage: FloatingPointCounter] = [:]
    private var stageMs: [StageTimings.Stage: Gauge] = [:]
    private var filterSeconds: [String: FloatingPointCounter] = [:]
    private var filterMs: [String: Gauge] = [:]
    /// What the counters have been advanced to (the progress snapshot before).
    private var last = Totals()
    private let lock = NSLock()

    private struct Totals {
        var framesIn = 0, framesOut = 0, ticks = 0, repeated = 0, dropped = 0, notDecoded = 0
        var captionBytesIn = 0, captionBytesOut = 0, captionTripletsDropped = 0
        var bytes: Int64 = 0
        var stageNanoseconds: [StageTimings.Stage: UInt64] = [:]
        var filterNanoseconds: [String: UInt64] = [:]
    }

    init(dimensions: [(String, String)] = []) {
        self.dimensions = dimensions
        func counter(_ name: String) -> Counter { Counter(label: name, dimensions: dimensions) }
        framesIn = counter("livefilter_frames_in_total")
        framesOut = counter("livefilter_frames_out_total")
        ticks = counter("livefilter_ticks_total")
        repeated = counter("livefilter_ticks_repeated_total")
        dropped = counter("livefilter_ticks_dropped_total")
        stalls = counter("livefilter_input_stalls_total")
        bytes = counter("livefilter_bytes_written_total")
        segments = counter("livefilter_segments_written_total")
        finished = Gauge(label: "livefilter_finished", dimensions: dimensions)
        speed = Gauge(label: "livefilter_speed", dimensions: dimensions)
        latency = Gauge(label: "livefilter_latency_seconds", dimensions: dimensions)
        latencyHistogram = Metrics.Timer(label: "livefilter_segment_latency_seconds", dimensions: dimensions)
        parts = counter("livefilter_parts_written_total")
        partLatency = Metrics.Timer(label: "livefilter_part_latency_seconds", dimensions: dimensions)
        losses = counter("livefilter_input_losses_total")
        lossSeconds = FloatingPointCounter(label: "livefilter_input_loss_seconds_total", dimensions: dimensions)
        inputLost = Gauge(label: "livefilter_input_lost", dimensions: dimensions)
        overload = Gauge(label: "livefilter_overload_level", dimensions: dimensions)
        overloadChanges = counter("livefilter_overload_changes_total")
        ticksShed = counter("livefilter_ticks_shed_total")
        presetChanges = counter("livefilter_encoder_preset_changes_total")
        notDecoded = counter("livefilter_pictures_not_decoded_total")
        captionBytesIn = counter("livefilter_caption_bytes_in_total")
        captionBytesOut = counter("livefilter_caption_bytes_out_total")
        captionTripletsDropped = counter("livefilter_caption_triplets_dropped_total")
        splices = counter("livefilter_splices_total")
        splicesLate = counter("livefilter_splices_late_total")
        finished.record(0)
        inputLost.record(0)
        overload.record(0)
    }

    /// Advances every counter to a progress snapshot (they only move forward).
    func update(_ p: JobProgress) {
        lock.lock(); defer { lock.unlock() }
        func advance(_ counter: Counter, _ from: inout Int, _ to: Int) {
            if to > from { counter.increment(by: to - from); from = to }
        }
        advance(framesIn, &last.framesIn, p.framesDecoded)
        advance(framesOut, &last.framesOut, p.framesWritten)
        advance(ticks, &last.ticks, p.ticks)
        advance(repeated, &last.repeated, p.repeated)
        advance(dropped, &last.dropped, p.dropped)
        advance(notDecoded, &last.notDecoded, p.picturesNotDecoded)
        advance(captionBytesIn, &last.captionBytesIn, p.captions.bytesIn)
        advance(captionBytesOut, &last.captionBytesOut, p.captions.bytesOut)
        advance(captionTripletsDropped, &last.captionTripletsDropped, p.captions.tripletsDropped)
        if p.bytes > last.bytes { bytes.increment(by: Int(p.bytes - last.bytes)); last.bytes = p.bytes }
        speed.record(p.speed)
        for stage in StageTimings.Stage.allCases {
            guard let ns = p.timings.nanoseconds[stage] else { continue }
            let name = stage.key
            let before = last.stageNanoseconds[stage] ?? 0
            if ns > before {
                stageSeconds[stage, default: FloatingPointCounter(label: "livefilter_stage_seconds_total", dimensions: dimensions + [("stage", name)])]
                    .increment(by: Double(ns - before) / 1e9)
                last.stageNanoseconds[stage] = ns
            }
            if let ms = p.timings.millisecondsPerCall(stage) {
                stageMs[stage, default: Gauge(label: "livefilter_stage_ms_per_frame", dimensions: dimensions + [("stage", name)])].record(ms)
            }
        }
        let frames = max(1, p.filtered)
        for pass in p.filterPasses {
            let before = last.filterNanoseconds[pass.name] ?? 0
            if pass.nanoseconds > before {
                filterSeconds[pass.name, default: FloatingPointCounter(label: "livefilter_filter_seconds_total", dimensions: dimensions + [("filter", pass.name)])]
                    .increment(by: Double(pass.nanoseconds - before) / 1e9)
                last.filterNanoseconds[pass.name] = pass.nanoseconds
            }
            filterMs[pass.name, default: Gauge(label: "livefilter_filter_ms_per_frame", dimensions: dimensions + [("filter", pass.name)])]
                .record(Double(pass.nanoseconds) / Double(frames) / 1e6)
        }
        if p.phase != .running { finished.record(1) }
    }

    /// An LL-HLS part was published; `latency`: since its last picture's input arrived (live inputs).
    func partPublished(latency: Duration?) {
        parts.increment()
        if let latency { partLatency.recordNanoseconds(Int64(latency.seconds * 1e9)) }
    }

    /// A live input delivered nothing new for a tick after delivering frames: one stall begins.
    func inputStalled() { stalls.increment() }

    /// The live input went silent past the loss time (`--on-input-loss hold|slate`): one loss begins.
    func inputLossBegan() {
        losses.increment()
        inputLost.record(1)
    }

    /// A tick made while the input is lost (its seconds count as loss as they pass).
    func inputLossLasted(seconds: Double) { lossSeconds.increment(by: seconds) }

    /// `--overload adapt` changed its level (0: nothing shed).
    func overloadLevel(_ level: Int) {
        overload.record(Double(level))
        overloadChanges.increment()
    }

    /// A new picture was not shown, evenly, to shed load.
    func tickShed() { ticksShed.increment() }
    func splicePlaced(late: Bool) {
        splices.increment()
        if late { splicesLate.increment() }
    }

    /// An encoder was reopened with another x264 preset (overload, at a keyframe).
    func encoderPresetChanged() { presetChanges.increment() }

    /// The lost input is back.
    func inputLossEnded() { inputLost.record(0) }

    /// An output segment was published; `latency` is how long after its first picture's input
    /// arrived (live inputs only).
    func segmentPublished(latency: Duration?) {
        segments.increment()
        if let latency {
            self.latency.record(latency.seconds)
            latencyHistogram.recordNanoseconds(Int64(latency.seconds * 1e9))
        }
    }
}

/// Each LL-HLS part's latency, for the run's summary (a part every ~0.5 s: a list is fine).
final class PartLatencyLog: Sendable {
    private let values = Mutex<[(fromTick: Double, fromInput: Double)]>([])

    func record(fromTick: Duration, fromInput: Duration) {
        values.withLock { $0.append((fromTick.seconds, fromInput.seconds)) }
    }

    var summary: JobSummary.PartLatency? {
        let all = values.withLock { $0 }
        guard !all.isEmpty else { return nil }
        func percentile(_ values: [Double], _ p: Double) -> Double {
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
        }
        let tick = all.map(\.fromTick), input = all.map(\.fromInput)
        return JobSummary.PartLatency(parts: all.count, fromTickP50: percentile(tick, 0.5), fromTickP95: percentile(tick, 0.95),
                                      fromInputP50: percentile(input, 0.5), fromInputP95: percentile(input, 0.95))
    }
}

/// When each video packet of a live input arrived, so a segment's latency can be measured from the
/// arrival of its first picture's input (input segment published → output segment written).
/// Bounded: the newest 8192 packets.
final class ArrivalLog: @unchecked Sendable {
    private var entries: [(pts: Int64, uptime: UInt64)] = []
    private var shown: [(tick: Int64, uptime: UInt64, pts: Int64, at: UInt64)] = []
    /// Ticks made while the input was lost (a channel's held picture or slate): no input picture
    /// is late there, so a part or segment ending or starting on one has no latency to count.
    private var lostTicks: Set<Int64> = []
    private let lock = NSLock()
    private let capacity = 8192

    /// The tick stage: `tick` was made while the input was lost.
    func lost(tick: Int64) {
        lock.lock(); defer { lock.unlock() }
        lostTicks.insert(tick)
        if lostTicks.count > capacity { lostTicks = Set(lostTicks.sorted().suffix(capacity / 2)) }
    }

    /// The read stage: a video packet with this pts has arrived now.
    func arrived(pts: Int64) {
        let now = DispatchTime.now().uptimeNanoseconds
        lock.lock(); defer { lock.unlock() }
        entries.append((pts, now))
        if entries.count > capacity { entries.removeFirst(entries.count - capacity / 2) }
    }

    /// The tick stage: tick `tick` shows the frame decoded from the packet with `pts`.
    func shown(tick: Int64, framePts: Int64) {
        lock.lock(); defer { lock.unlock() }
        guard let arrival = entries.last(where: { $0.pts == framePts })?.uptime else { return }
        shown.append((tick, arrival, framePts, DispatchTime.now().uptimeNanoseconds))
        if shown.count > capacity { shown.removeFirst(shown.count - capacity / 2) }
    }

    /// The pts of the frame shown at `tick` (or the last tick before it that was logged).
    func framePts(shownAt tick: Int64) -> Int64? {
        lock.lock(); defer { lock.unlock() }
        return shown.last(where: { $0.tick <= tick })?.pts
    }

    /// For a part ending at `tick`, published now: the time since that tick ran, and since the input
    /// packet of its picture arrived.
    func latency(ofPartEndingAt tick: Int64) -> (fromTick: Duration, fromInput: Duration)? {
        let now = DispatchTime.now().uptimeNanoseconds
        lock.lock(); defer { lock.unlock() }
        guard !lostTicks.contains(tick), let entry = shown.last(where: { $0.tick <= tick }), now >= entry.at, now >= entry.uptime else { return nil }
        return (.nanoseconds(Int64(now - entry.at)), .nanoseconds(Int64(now - entry.uptime)))
    }

    /// The latency of an output segment starting at `tick`, published now.
    func latency(ofSegmentStartingAt tick: Int64) -> Duration? {
        let now = DispatchTime.now().uptimeNanoseconds
        lock.lock(); defer { lock.unlock() }
        guard !lostTicks.contains(tick), let arrival = shown.last(where: { $0.tick <= tick })?.uptime, now >= arrival else { return nil }
        return .nanoseconds(Int64(now - arrival))
    }
}

/// When each picture of a live input left the decoder (its input timestamp in seconds, the wall
/// clock as Unix time): with the origin's publication times, a benchmark measures how soon a
/// published part's pictures are decoded. Bounded: the newest 8192 pictures.
final class DecodeTimeLog: Sendable {
    private let entries = Mutex<[(pts: Double, at: Double)]>([])
    private let seconds: Double

    init(timeBase: Rational) { seconds = timeBase.doubleValue }

    func decoded(pts: Int64) {
        let now = Date().timeIntervalSince1970
        entries.withLock { list in
            list.append((Double(pts) * seconds, now))
            if list.count > 8192 { list.removeFirst(4096) }
        }
    }

    var all: [(pts: Double, at: Double)] { entries.withLock { $0 } }
}
