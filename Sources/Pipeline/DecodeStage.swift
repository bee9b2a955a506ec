import Filters
import Foundation
import MediaIO
import Synchronization

/// A decoded video frame with its time relative to the input's start.
struct TimedFrame: @unchecked Sendable {
    var frame: Frame
    /// Presentation time, relative to the container's start time.
    var time: MediaTime
    /// How long the frame lasts, in the same units as `time`.
    var duration: Int64
    /// `--overload adapt`: the decoder pays the thinning with non-reference pictures it leaves out
    /// (the tick stage then shows every picture it gets), as it did when this frame came out.
    var thinnedAtDecode = false
    /// `time`'s value, in the video stream's time base.
    var relativePts: Int64 { time.value }
}

/// Shared stage timer: components on every thread add their wall time here.
final class TimingRecorder: @unchecked Sendable {
    private var recorded = StageTimings()
    private let lock = NSLock()

    var timings: StageTimings {
        lock.lock(); defer { lock.unlock() }
        return recorded
    }

    @inline(__always)
    func measure<T, E: Error>(_ stage: StageTimings.Stage, _ body: () throws(E) -> T) throws(E) -> T {
        let start = DispatchTime.now().uptimeNanoseconds
        defer {
            let elapsed = DispatchTime.now().uptimeNanoseconds - start
            lock.lock()
            recorded.add(stage, nanoseconds: elapsed)
            lock.unlock()
        }
        return try body()
    }
}

/// What the decode stage sends the tick stage.
enum DecodedEvent: @unchecked Sendable {
    case frame(TimedFrame)
    /// `--overload adapt`: the picture at this time (relative, like a frame's) was shed, left out
    /// before or in the decoder. A tick that holds the picture before it then repeats it by the
    /// overload's choice, not for a stalled input. `captions`: its A/53 caption bytes, read from
    /// the packet's SEI (the decoder gives none for a picture it does not output), so they are
    /// carried to the next picture shown, not lost.
    case leftOut(Int64, captions: [UInt8])
    /// The input ended; the time is the end of its last frame.
    case end(MediaTime)
}

/// The decode stage: packets in file order; video decoded into timed frames in presentation order,
/// audio handed on to the audio stage in step with the video (so a live run's latency skip finds
/// audio and video at the same place). Times are made relative to the container's start (MPEG-TS
/// and HLS start near 1.4 s); a frame without a timestamp follows the previous one.
final class DecodeStage: @unchecked Sendable {
    let frames: Channel<DecodedEvent>
    /// Audio packets for the audio stage, when the plan has audio.
    let audio: Channel<Packet>?
    private let packets: Channel<Packet>
    private let videoIndex: Int
    private let decoder: Decoder
    private let timing: TimingRecorder
    let timeBase: Rational
    /// The container's start, in the video time base.
    let origin: Int64
    private var lastPts: Int64?
    private var lastDuration: Int64
    private let decodedCount = Atomic<Int>(0)
    private let notDecodedCount = Atomic<Int>(0)
    /// `--overload adapt`: the decoder's skipping follows the level's effect.
    var overload: OverloadController?
    private var skipsPictures = false
    /// `thinEvery`: pictures owed to the thinning (1/N per picture), paid with non-reference ones.
    private var thinningCredit = 0.0
    /// Pictures since the last non-reference one: while recent, the thinning is done here.
    private var picturesSinceNonReference = Int.max
    private var thinsHere = false
    /// Pictures left out (time, caption bytes), sent on as `.leftOut` events after the packet's decision.
    private var leftOutPending: [(time: Int64, captions: [UInt8])] = []
    /// Pictures are being left out before or in the decoder (overload).
    private var leavesOutPictures = false
    private let mediaTimeBits = Atomic<UInt64>(0)
    /// A live H.264 input: the pictures the decoder holds for reordering, given up as soon as no
    /// earlier one can come (`Decoder.releaseHeldPicture`) whenever the input has nothing more yet.
    private var held: HeldPictures?
    private let releasedCount = Atomic<Int>(0)
    /// A live input's decode times (input timestamp in seconds, wall clock), for the report.
    let decodeTimes: DecodeTimeLog?

    /// The decoder for `demuxer`'s video as `spec` says; audio packets go on when the spec reads audio.
    init(spec: DecodeSpec, demuxer: Demuxer, packets: Channel<Packet>, timing: TimingRecorder, capacity: Int = 4) throws(MediaError) {
        let (origin, withAudio, nominalRate) = (spec.origin, spec.audioStream != nil, spec.nominalRate)
        let (releasesHeldPictures, recordsDecodeTimes) = (spec.releasesHeldPictures, spec.recordsDecodeTimes)
        self.packets = packets
        videoIndex = demuxer.video.index
        audio = withAudio && demuxer.audio != nil ? Channel(capacity: 32) : nil
        self.timing = timing
        decoder = try Decoder(demuxer: demuxer, streamIndex: demuxer.video.index, releasingHeldPictures: releasesHeldPictures)
        held = decoder.releasesHeldPictures ? HeldPictures() : nil
        decodeTimes = recordsDecodeTimes ? DecodeTimeLog(timeBase: demuxer.video.timeBase) : nil
        timeBase = demuxer.video.timeBase
        self.origin = origin
        lastDuration = max(1, Int64((1 / nominalRate.doubleValue / timeBase.doubleValue).rounded()))
        frames = Channel(capacity: capacity)
    }

    func start(in group: StageGroup) {
        group.onCancel { [frames, audio] in
            frames.cancel()
            audio?.cancel()
        }
        group.start("decode") { [self] in try run() }
    }

    private func run() throws {
        defer { audio?.finish() }
        do {
            while true {
                // Nothing more has arrived: what the decoder may give up now comes out now.
                if held != nil, packets.queued == 0 { try releaseHeldPictures() }
                guard let packet = try packets.receive() else { break }
                guard packet.streamIndex == videoIndex else {
                    try audio?.send(packet)
                    continue
                }
                if packet.isSegmentEnd {
                    // An independent segment's end: the frames the decoder holds (reordering, frame
                    // threads) come out now, not when the next segment arrives.
                    decoder.sendEndOfStream()
                    try drain()
                    decoder.resume()
                    held?.flushed()
                    continue
                }
                if let overload {
                    let decoded = decodes(packet, under: overload.effect)
                    for picture in leftOutPending { try frames.send(.leftOut(picture.time, captions: picture.captions)) }
                    leftOutPending.removeAll()
                    if !decoded {
                        if let pts = packet.presentationTimestamp { held?.leftOut(pts) }
                        continue
                    }
                }
                if held != nil { try prepareForIDR(packet) }
                if let pts = packet.presentationTimestamp { held?.sent(pts) }
                try timing.measure(.decode) { () throws(FFmpegError) in try decoder.send(packet) }
                try drain()
            }
            decoder.sendEndOfStream()
            try drain()
            try frames.send(.end(lastFrameEnd ?? .zero))
            frames.finish()
        } catch let error as FFmpegError {
            frames.fail(MediaError.processing(error))
            throw MediaError.processing(error)
        } catch let error as MediaError {
            frames.fail(error)
            throw error
        }
    }

    /// Gives up the held pictures no later input can precede, lowest first, one packet each.
    private func releaseHeldPictures() throws {
        guard var count = held?.releasable, count > 0 else { return }
        while count > 0 {
            count -= 1
            try timing.measure(.decode) { () throws(FFmpegError) in try decoder.releaseHeldPicture() }
            // None: the decoder had nothing to give (skipping non-reference pictures, a damaged one).
            guard try drain(released: true) > 0 else { break }
            releasedCount.add(1, ordering: .relaxed)
        }
    }

    /// See `HeldPictures.needsFlushBeforeIDR`.
    private func prepareForIDR(_ packet: Packet) throws {
        guard held?.needsFlushBeforeIDR == true, packet.h264IsIDR(lengthSize: decoder.h264LengthSize) == true else { return }
        decoder.sendEndOfStream()
        try drain()
        decoder.resume()
        held?.flushed()
    }

    @discardableResult
    private func drain(released: Bool = false) throws -> Int {
        var count = 0
        while case let .frame(frame) = try timing.measure(.decode, { () throws(FFmpegError) in try decoder.receive() }) {
            count += 1
            if let pts = frame.timestamp {
                held?.output(pts, released: released)
                decodeTimes?.decoded(pts: pts)
            }
            let pts = frame.timestamp ?? ((lastPts ?? origin) + lastDuration)
            if frame.durationInStreamTimeBase > 0 {
                lastDuration = frame.durationInStreamTimeBase
            } else if let lastPts, pts > lastPts {
                // A gap where pictures are left out (overload) is a missing picture, not a longer
                // one: the frame keeps a picture's duration, so the tick after it waits for the
                // next picture instead of repeating this one (and dropping that one after).
                let gap = pts - lastPts
                if !(leavesOutPictures && gap > lastDuration * 3 / 2) { lastDuration = gap }
            }
            lastPts = pts
            let relative = pts - origin
            decodedCount.add(1, ordering: .relaxed)
            mediaTimeBits.store((Double(relative + lastDuration) * timeBase.doubleValue).bitPattern, ordering: .relaxed)
            try frames.send(.frame(TimedFrame(frame: frame, time: time(relative), duration: lastDuration, thinnedAtDecode: thinsHere)))
        }
        return count
    }

    /// Applies the overload level's effect to a video packet: false when it is not decoded. The
    /// decoder skips every non-reference picture at "decode only reference pictures"; a thinning
    /// (one picture in N not shown) is paid here with non-reference pictures, never decoded, when
    /// the stream has them (the tick stage thins otherwise: `thinsAtDecode`).
    private func decodes(_ packet: Packet, under effect: OverloadEffect) -> Bool {
        if effect.skipsNonReferencePictures != skipsPictures {
            decoder.skipsNonReferencePictures(effect.skipsNonReferencePictures)
            skipsPictures = effect.skipsNonReferencePictures
        }
        leavesOutPictures = effect.skipsNonReferencePictures || effect.thinEvery != nil
        guard decoder.isH264, leavesOutPictures else {
            thinsHere = false
            return true
        }
        let nonReference = packet.h264IsNonReference(lengthSize: decoder.h264LengthSize) == true
        picturesSinceNonReference = nonReference ? 0 : picturesSinceNonReference &+ 1
        if skipsPictures {
            // The decoder discards it (AVDISCARD_NONREF).
            if nonReference { recordLeftOut(packet) }
            return true
        }
        guard let every = effect.thinEvery else { return true }
        // Non-reference pictures within two thinning periods: the stream has them to give.
        thinsHere = picturesSinceNonReference < 2 * every
        thinningCredit = min(2, thinningCredit + 1 / Double(every))
        guard nonReference, thinningCredit >= 1 else { return true }
        thinningCredit -= 1
        recordLeftOut(packet)
        return false
    }

    private func recordLeftOut(_ packet: Packet) {
        notDecodedCount.add(1, ordering: .relaxed)
        guard let pts = packet.presentationTimestamp else { return }
        leftOutPending.append((pts - origin, packet.h264CaptionData(lengthSize: decoder.h264LengthSize)))
    }

    /// The end of the newest frame decoded, relative to the start.
    private var lastFrameEnd: MediaTime? { lastPts.map { time($0 - origin + lastDuration) } }

    func time(_ relative: Int64) -> MediaTime {
        MediaTime(value: relative, numerator: Int64(timeBase.numerator), denominator: Int64(timeBase.denominator))
    }

    var framesDecoded: Int { decodedCount.load(ordering: .relaxed) }
    /// Pictures the decoder skipped to shed load (non-reference, `--overload adapt`).
    var picturesNotDecoded: Int { notDecodedCount.load(ordering: .relaxed) }
    /// Pictures the decoder gave up before its reordering delay had passed (live H.264).
    var heldPicturesReleased: Int { releasedCount.load(ordering: .relaxed) }
    /// Seconds of input decoded so far (end of the newest frame).
    var mediaTime: Double { Double(bitPattern: mediaTimeBits.load(ordering: .relaxed)) }
    /// Decode errors the decoder skipped over. Read after the stage ended.
    var decodeErrors: Int { decoder.decodeErrors }
}
