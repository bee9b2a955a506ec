import MediaIO
import Synchronization

/// The mux stage of one output: the only thread that writes to its sink, so video from the encode
/// stages and audio from the audio stage never need a lock. Ends when every producer finished.
final class MuxStage: @unchecked Sendable {
    let sink: any PacketSink
    let input: Channel<MuxItem>
    private let timing: TimingRecorder
    private let bytes = Atomic<Int64>(0)
    private let dropped = Atomic<Int>(0)
    private let written = Atomic<Int>(0)

    init(sink: any PacketSink, producers: Int, timing: TimingRecorder) {
        self.sink = sink
        self.timing = timing
        input = Channel(capacity: 64, producers: producers)
    }

    func start(in group: StageGroup) {
        group.onCancel { [input] in input.cancel() }
        group.start("mux") { [self] in
            while let item = try input.receive() {
                do throws(MediaError) {
                    try timing.measure(.mux) { () throws(MediaError) in
                        try sink.write(item.packet, toStream: item.stream, timeBase: item.timeBase)
                    }
                } catch {
                    guard item.droppableIfInvalid, case let .processing(e) = error, e.isInvalidData else { throw error }
                    dropped.add(1, ordering: .relaxed)
                }
                bytes.store(sink.bytesWritten, ordering: .relaxed)
                written.add(1, ordering: .relaxed)
            }
        }
    }

    /// Bytes written so far (safe to read from any thread).
    var bytesWritten: Int64 { bytes.load(ordering: .relaxed) }
    /// Packets handed to the sink (a damaged one dropped there included).
    var packetsWritten: Int { written.load(ordering: .relaxed) }
    /// Damaged packets dropped.
    var droppedPackets: Int { dropped.load(ordering: .relaxed) }
}
