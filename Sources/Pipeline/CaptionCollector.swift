import Broadcast
import Synchronization

/// The tick stage's caption path. Every source picture's A/53 bytes are collected as its event
/// arrives — shown, dropped by the display link (`--fps`), skipped to the live edge, superseded, or
/// shed before the decoder (`.leftOut`) — held in presentation order (a shed picture's event can
/// come before the decoder has given up earlier pictures), and handed to a `CaptionPacer` when the
/// picture an output tick shows reaches them. Each output picture then takes the pacer's next bytes:
/// a repeated tick gets new bytes or none, never the previous picture's again.
///
/// Used by the tick stage's task alone; the counts are atomics, read by progress from other threads.
final class CaptionCollector {
    let plan: CaptionPlan
    private var pacer: CaptionPacer
    /// Source pictures' bytes not yet reached by a shown picture, by presentation time.
    private var waiting: [(time: Int64, bytes: [UInt8])] = []
    private let bytesInCount = Atomic<Int>(0)
    private let bytesOutCount = Atomic<Int>(0)
    private let droppedCount = Atomic<Int>(0)

    init(plan: CaptionPlan) {
        self.plan = plan
        pacer = CaptionPacer(outputRate: plan.outputRate)
    }

    /// The caption bytes of the source picture at `time` (relative, video time base).
    func collect(_ bytes: [UInt8], at time: Int64) {
        guard !bytes.isEmpty else { return }
        bytesInCount.add(bytes.count - bytes.count % 3, ordering: .relaxed)
        // `--captions drop`: counted in, never out.
        guard plan.keeps else { return }
        // Nearly always the newest: decoded pictures come in presentation order.
        var at = waiting.endIndex
        while at > waiting.startIndex, waiting[at - 1].time > time { at -= 1 }
        waiting.insert((time, bytes), at: at)
    }

    /// The bytes of the next output picture, which shows the source picture at `time` (nil: the
    /// tick shows no new source picture: a repeat, or a slate). Every source picture up to the
    /// shown one goes to the pacer first, in order.
    func nextPicture(showing time: Int64?) -> [UInt8] {
        guard plan.keeps else { return [] }
        if let time {
            var reached = 0
            while reached < waiting.count, waiting[reached].time <= time {
                pacer.append(sourcePicture: waiting[reached].bytes)
                reached += 1
            }
            if reached > 0 { waiting.removeFirst(reached) }
        }
        let bytes = pacer.backlog > 0 ? pacer.nextPicture() : []
        if !bytes.isEmpty { bytesOutCount.add(bytes.count, ordering: .relaxed) }
        let dropped = pacer.dropped
        if dropped != droppedCount.load(ordering: .relaxed) { droppedCount.store(dropped, ordering: .relaxed) }
        return bytes
    }

    /// A shard's pre-roll: pictures before its first are the shard before's, captions included.
    func discard(before time: Int64) {
        waiting.removeAll { $0.time < time }
    }

    /// The input's timeline starts again (a returning input): what waits belongs before it.
    func flushWaiting() {
        guard plan.keeps else { return }
        for entry in waiting { pacer.append(sourcePicture: entry.bytes) }
        waiting.removeAll()
    }

    /// Caption bytes (whole triplets) the source's pictures carried, padding included.
    var bytesIn: Int { bytesInCount.load(ordering: .relaxed) }
    /// Caption bytes written onto output pictures.
    var bytesOut: Int { bytesOutCount.load(ordering: .relaxed) }
    /// Triplets the pacer dropped: a source that sent more than the output could carry, for minutes.
    var tripletsDropped: Int { droppedCount.load(ordering: .relaxed) }
}
