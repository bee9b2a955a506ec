import Dispatch
import MediaIO
import Synchronization

/// The read stage: demuxes on its own thread and sends the video and audio packets, in file order,
/// to the decode stage. It is the only stage that waits on the network; a full channel makes it
/// wait for the decoder (back-pressure), and `stop()` interrupts a blocking read at once.
final class ReadStage: @unchecked Sendable {
    let packets: Channel<Packet>
    private let demuxer: Demuxer
    private let audioIndex: Int?
    private let withVideo: Bool
    private let stopping = Atomic<Bool>(false)
    private let ended = Atomic<Bool>(false)
    private let lastArrival = Atomic<UInt64>(DispatchTime.now().uptimeNanoseconds)
    private let newestVideoPts = Atomic<Int64>(.min)
    /// Live inputs: when each video packet arrived (for the segments' latency).
    let arrivals: ArrivalLog?
    /// The source's ad markers and timed ranges, posted before the packet they came with is sent on.
    let cues = CueInbox()

    /// - Parameter capacity: packets queued. A live input gets room for minutes, so the reader
    ///   keeps reading (and the live edge stays current) while the pipeline catches up.
    ///   `withVideo` false sends audio only (the audio task of a split job).
    init(demuxer: Demuxer, audioStream: Int?, capacity: Int, withVideo: Bool = true, arrivals: ArrivalLog? = nil) {
        self.demuxer = demuxer
        self.arrivals = arrivals
        self.withVideo = withVideo
        audioIndex = audioStream
        packets = Channel(capacity: capacity)
    }

    func start(in group: StageGroup) {
        group.onCancel { [self] in
            demuxer.interrupt()
            packets.cancel()
        }
        group.start("read") { [self] in try run() }
    }

    private func run() throws {
        defer {
            ended.store(true, ordering: .relaxed)
            packets.finish()
        }
        let videoIndex = demuxer.video.index
        while !stopping.load(ordering: .relaxed) {
            let packet = Packet()
            let result: Demuxer.ReadResult
            do {
                result = try demuxer.read(into: packet)
            } catch {
                // An interrupted read after stop() is the end, not an error.
                if stopping.load(ordering: .relaxed) { return }
                // What was read still reaches the consumers, then the error.
                packets.fail(demuxer.inputRefusal ?? MediaError.processing(error))
                return
            }
            cues.post(demuxer.takeCues())
            if case .endOfFile = result { return }
            lastArrival.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
            if packet.streamIndex == videoIndex, withVideo {
                if let pts = packet.presentationTimestamp {
                    if pts > newestVideoPts.load(ordering: .relaxed) { newestVideoPts.store(pts, ordering: .relaxed) }
                    arrivals?.arrived(pts: pts)
                }
                try packets.send(packet)
            } else if packet.streamIndex == audioIndex {
                try packets.send(packet)
            }
        }
    }

    /// Stops reading once the tick stage has stopped: a blocking network read is interrupted and
    /// what was queued for the decoder is dropped (no picture will be shown from it).
    func stop() {
        stopping.store(true, ordering: .relaxed)
        demuxer.interrupt()
        packets.cancel()
    }

    /// Whether reading has ended (the input's end, an error or a stop): no more silence to measure.
    var hasEnded: Bool { ended.load(ordering: .relaxed) }

    /// Seconds since the last packet arrived.
    var secondsSinceLastPacket: Double {
        // The read thread may store an arrival after `now` was taken: that is no silence (an
        // unsigned difference going below zero trapped, a crash seen on a live LL-HLS input).
        let last = lastArrival.load(ordering: .relaxed), now = DispatchTime.now().uptimeNanoseconds
        return now > last ? Double(now - last) / 1e9 : 0
    }

    /// The newest video pts received (stream time base), for the live edge.
    var newestVideoTimestamp: Int64? {
        let v = newestVideoPts.load(ordering: .relaxed)
        return v == .min ? nil : v
    }
}
