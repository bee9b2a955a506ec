import Dispatch
import Foundation
import MediaIO
import Synchronization

/// Where `MediaInput` gets packets: straight from the demuxer (offline), or from a queue that a
/// reader thread fills from the network (live), which never blocks the tick loop.
protocol PacketReader: AnyObject {
    /// `.packet`, `.endOfFile`, or nil when nothing is available yet.
    func nextPacket(into packet: Packet) throws(FFmpegError) -> Demuxer.ReadResult?
}

extension Demuxer: PacketReader {
    func nextPacket(into packet: Packet) throws(FFmpegError) -> Demuxer.ReadResult? {
        try read(into: packet)
    }
}

/// Packets read on a background thread, handed over without blocking the reader of the queue.
/// Bounded in bytes: the reader thread waits when the consumer is far behind.
final class LivePacketQueue: PacketReader, @unchecked Sendable {
    enum Failure: Error { case stalled(seconds: Int), read(FFmpegError) }

    private let condition = NSCondition()
    private var packets: [Packet] = []
    private var queuedBytes = 0
    private var finished = false
    private var failure: FFmpegError?
    private var stopping = false
    private var lastArrival = DispatchTime.now()
    private var newestVideoPts: Int64?
    private let maxBytes: Int
    private let demuxer: Demuxer
    private var thread: Thread?

    init(demuxer: Demuxer, maxBytes: Int = 256 << 20) {
        self.demuxer = demuxer
        self.maxBytes = maxBytes
    }

    /// Starts the reader thread.
    func start() {
        let thread = Thread { [self] in readLoop() }
        thread.name = "livefilter.reader"
        self.thread = thread
        thread.start()
    }

    private func readLoop() {
        while true {
            let packet = Packet()
            do throws(FFmpegError) {
                let result = try demuxer.read(into: packet)
                condition.lock()
                defer { condition.unlock() }
                if stopping { return }
                switch result {
                case .endOfFile:
                    finished = true
                    condition.broadcast()
                    return
                case .packet:
                    lastArrival = .now()
                    if packet.streamIndex == demuxer.video.index, let pts = packet.presentationTimestamp {
                        newestVideoPts = max(newestVideoPts ?? pts, pts)
                    }
                    packets.append(packet)
                    queuedBytes += packet.size
                    while queuedBytes > maxBytes && !stopping { condition.wait() }
                }
            } catch {
                condition.lock()
                if !stopping { failure = error }
                finished = true
                condition.unlock()
                return
            }
        }
    }

    func nextPacket(into packet: Packet) throws(FFmpegError) -> Demuxer.ReadResult? {
        condition.lock()
        defer { condition.unlock() }
        if !packets.isEmpty {
            let next = packets.removeFirst()
            queuedBytes -= next.size
            packet.take(from: next)
            condition.broadcast()
            return .packet
        }
        if let failure { throw failure }
        return finished ? .endOfFile : nil
    }

    /// Seconds since the last packet arrived.
    var secondsSinceLastPacket: Double {
        condition.lock()
        defer { condition.unlock() }
        return Double(DispatchTime.now().uptimeNanoseconds - lastArrival.uptimeNanoseconds) / 1e9
    }

    /// The newest video pts received (stream time base), for the live edge.
    var newestVideoTimestamp: Int64? {
        condition.lock()
        defer { condition.unlock() }
        return newestVideoPts
    }

    /// Stops the reader: interrupts a blocking network read and waits for the thread to leave.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        demuxer.interrupt()
        while let thread, thread.isExecuting { usleep(1000) }
    }
}
