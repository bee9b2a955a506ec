import Dispatch
import Filters
import Foundation
import MediaIO

/// One run: decode the input, take frames on the output clock, filter them in RGB, encode, mux.
///
/// `init` does every check that can fail before work starts (input, chain geometry, output path),
/// so a bad job fails at start-up with nothing written.
public final class TranscodeJob {
    public let configuration: JobConfiguration
    public let demuxer: Demuxer
    /// The chain actually run: the orientation fix first, then the user's chain.
    public let effectiveChain: FilterChain
    public let chainOutputSize: FrameSize
    public let encodeSize: FrameSize
    public let container: OutputContainer
    /// The output frame rate (for CFR) or nominal rate (timestamps kept).
    public let outputRate: Rational
    let appliedRotation: Int

    public init(configuration: JobConfiguration) throws(JobError) {
        self.configuration = configuration
        guard let container = OutputContainer(path: configuration.output) else {
            throw .media(.unsupportedOutput(configuration.output, reason: "unknown output type"))
        }
        self.container = container
        do {
            demuxer = try Demuxer(url: configuration.input, options: configuration.inputOptions)
        } catch {
            throw .media(error)
        }
        let video = demuxer.video

        var filters = configuration.chain.filters
        var rotation = 0
        if configuration.orientation == .auto, video.rotationClockwise != 0 {
            if let quarter = video.quarterTurnRotation {
                rotation = quarter
                if quarter != 0 { filters.insert(Rotate(quarterTurns: quarter / 90), at: 0) }
            } else {
                rotation = Int(video.rotationClockwise.rounded())
                filters.insert(Rotate(degrees: video.rotationClockwise), at: 0)
            }
        }
        appliedRotation = rotation
        effectiveChain = FilterChain(filters)
        do {
            chainOutputSize = try effectiveChain.outputSize(for: video.size)
        } catch {
            throw .chain(error)
        }
        if container.isImageSequence {
            encodeSize = chainOutputSize
        } else {
            // yuv420p needs even sizes: drop the odd last column/row rather than resample.
            encodeSize = FrameSize(width: max(2, chainOutputSize.width & ~1), height: max(2, chainOutputSize.height & ~1))
        }
        outputRate = configuration.frameRate ?? video.frameRate.flatMap { $0.isPositive && $0.doubleValue <= 1000 ? $0 : nil } ?? Rational(30, 1)
    }

    /// Runs to the end of the input, or until `shouldStop` says so (then the output is finished
    /// with what was done). Progress is reported a few times a second.
    public func run(progress: (JobProgress) -> Void = { _ in }, shouldStop: () -> Bool = { false }) throws(JobError) -> JobSummary {
        do {
            return try TranscodeRun(job: self).run(progress: progress, shouldStop: shouldStop)
        } catch {
            throw .media(error)
        }
    }
}

/// The state of one pass over the input: built by `TranscodeJob.run`, used once.
private final class TranscodeRun {
    let job: TranscodeJob
    let demuxer: Demuxer
    let config: JobConfiguration
    var summary: JobSummary

    // Video
    let videoDecoder: Decoder
    let videoEncoder: Encoder
    var videoStreamIndex = 0
    let passthrough: Bool
    var toRGB: FrameToRGB?
    var sourceImage: RGBImage?
    var chainRenderer: ChainRenderer?
    var toYUV: RGBToFrame?
    /// Constant-rate output: the display-link selector. Nil keeps source timestamps.
    var selector: FrameSelector<Frame>?
    var lastEncodedInput: Frame?
    var lastSourcePts: Int64?
    var lastSourceDuration: Int64 = 0
    var lastOutputPts: Int64 = .min
    var packetDurations: [Int64: Int64] = [:]
    let videoOrigin: Int64
    let videoTimeBase: Rational

    // Audio
    var audioStreamIndex: Int?
    var audioCopyTimeBase: Rational?
    var audioDecoder: Decoder?
    var audioConverter: AudioConverter?
    var audioEncoder: Encoder?
    var audioOrigin: Int64 = 0

    // Output
    let muxer: Muxer
    let output: AtomicOutput?
    let sequence: AtomicImageSequence?

    // Progress
    let start = DispatchTime.now()
    var lastReport = DispatchTime.now()
    var mediaTime = 0.0

    init(job: TranscodeJob) throws(MediaError) {
        self.job = job
        demuxer = job.demuxer
        config = job.configuration
        let video = demuxer.video
        videoTimeBase = video.timeBase
        videoOrigin = Int64((demuxer.startTime / video.timeBase.doubleValue).rounded())

        let isPNG = job.container.isImageSequence
        passthrough = !isPNG && job.effectiveChain.isEmpty && job.encodeSize == video.size && video.pixelFormatName == "yuv420p"
        summary = JobSummary(outputPath: config.output, inputSize: video.size, outputSize: job.encodeSize,
                             roundedFrom: job.encodeSize == job.chainOutputSize ? nil : job.chainOutputSize,
                             appliedRotation: job.appliedRotation,
                             videoPath: passthrough ? .passthrough : .rgbChain, audioPath: .none)

        // Output path checks come before any file is created.
        if isPNG {
            sequence = try AtomicImageSequence(pattern: config.output, overwrite: config.overwrite)
            output = nil
            try sequence!.create()
            muxer = try Muxer(path: sequence!.temporaryPattern, container: job.container)
        } else {
            sequence = nil
            output = try AtomicOutput(path: config.output, overwrite: config.overwrite, temporaryExtension: job.container.rawValue)
            muxer = try Muxer(path: output!.temporaryPath, container: job.container)
        }

        videoDecoder = try Decoder(demuxer: demuxer, streamIndex: video.index)
        let timeBase = config.frameRate.map { $0.inverse } ?? video.timeBase
        if config.frameRate != nil { selector = FrameSelector(rate: job.outputRate) }
        let color = Self.outputColor(for: video)
        if isPNG {
            videoEncoder = try Encoder.png(size: job.encodeSize, timeBase: timeBase)
        } else {
            videoEncoder = try Encoder.h264(size: job.encodeSize, frameRate: job.outputRate, timeBase: timeBase, color: color,
                                            settings: config.video, globalHeader: muxer.wantsGlobalHeader)
        }
        if !passthrough {
            toRGB = FrameToRGB(outputSize: video.size, color: video.colorSpace)
            sourceImage = RGBImage(size: video.size)
            do {
                chainRenderer = try ChainRenderer(chain: job.effectiveChain, inputSize: video.size)
            } catch {
                throw .invalidSettings(error.description)
            }
            if !isPNG { toYUV = try RGBToFrame(size: job.encodeSize, color: color) }
        }
        videoStreamIndex = try muxer.addStream(from: videoEncoder)
        if config.orientation == .keep, video.rotationClockwise != 0 {
            muxer.setRotation(streamIndex: videoStreamIndex, clockwiseDegrees: video.rotationClockwise)
        }

        try setUpAudio(isPNG: isPNG)

        var options: [(String, String)] = []
        if job.container == .mp4 || job.container == .mov { options.append(("movflags", "+faststart")) }
        try muxer.writeHeader(options: options)
    }

    /// The output's colour tags: the source's where it states them, else BT.709 for HD, BT.601 for SD.
    static func outputColor(for video: VideoStreamInfo) -> ColorDescription {
        let unspecified: Int32 = 2
        var c = video.colorSpace
        let hd = video.size.height >= 720 || video.size.width >= 1280
        if c.matrix == unspecified || c.matrix == 0 { c.matrix = hd ? 1 : 6 }  // BT709 : SMPTE170M
        if c.primaries == unspecified || c.primaries == 0 { c.primaries = hd ? 1 : 6 }
        if c.transfer == unspecified || c.transfer == 0 { c.transfer = hd ? 1 : 6 }
        c.isFullRange = false
        return c
    }

    func setUpAudio(isPNG: Bool) throws(MediaError) {
        guard !isPNG, let audio = demuxer.audio, config.audio != .none else { return }
        audioOrigin = Int64((demuxer.startTime / audio.timeBase.doubleValue).rounded())
        if config.audio == .automatic, audio.isAAC {
            audioStreamIndex = try muxer.addStream(copying: audio.index, of: demuxer)
            audioCopyTimeBase = audio.timeBase
            summary.audioPath = .copy
            return
        }
        var settings = AACSettings()
        if case let .aac(s) = config.audio { settings = s }
        let channels = settings.channels ?? min(audio.channels, 2)
        let rate = settings.sampleRate ?? Self.aacSampleRate(near: audio.sampleRate)
        let bitRate = settings.bitRate ?? AACSettings.defaultBitRatePerChannel * channels
        let decoder = try Decoder(demuxer: demuxer, streamIndex: audio.index)
        let encoder = try Encoder.aac(sampleRate: rate, channels: channels, bitRate: bitRate, globalHeader: muxer.wantsGlobalHeader)
        audioConverter = try AudioConverter(decoder: decoder, sampleRate: rate, channels: channels, frameSize: encoder.frameSize)
        audioDecoder = decoder
        audioEncoder = encoder
        audioStreamIndex = try muxer.addStream(from: encoder)
        summary.audioPath = .aac
    }

    /// AAC's sampling rates; anything else is resampled to the nearest one.
    static func aacSampleRate(near rate: Int) -> Int {
        let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000]
        return rates.min(by: { abs($0 - rate) < abs($1 - rate) }) ?? 48000
    }

    func run(progress: (JobProgress) -> Void, shouldStop: () -> Bool) throws(MediaError) -> JobSummary {
        let packet = Packet()
        do throws(FFmpegError) {
            reading: while true {
                if shouldStop() { summary.interrupted = true; break reading }
                switch try summary.timings.measure(.demux, { () throws(FFmpegError) in try demuxer.read(into: packet) }) {
                case .endOfFile:
                    break reading
                case .packet:
                    if packet.streamIndex == demuxer.video.index {
                        try summary.timings.measure(.decode) { () throws(FFmpegError) in try videoDecoder.send(packet) }
                        try drainVideoDecoder()
                    } else {
                        try handleAudio(packet)
                    }
                }
                reportIfDue(progress)
            }
            videoDecoder.sendEndOfStream()
            try drainVideoDecoder()
            try finishVideoTimeline()
            try videoEncoder.sendEndOfStream()
            try drainVideoEncoder()
            try finishAudio()
        } catch let error {
            throw MediaError.processing(error)
        }
        try muxer.finish()
        summary.bytes = muxer.bytesWritten
        summary.decodeErrors = videoDecoder.decodeErrors + (audioDecoder?.decodeErrors ?? 0)
        if let selector {
            summary.framesDropped = selector.droppedFrames
            summary.framesRepeated = selector.repeatedTicks
            summary.duration = Double(summary.framesWritten) / job.outputRate.doubleValue
        }
        if let output { try output.commit() }
        if let sequence { try sequence.commit() }
        if summary.bytes == 0, let size = try? FileManager.default.attributesOfItem(atPath: config.output)[.size] as? NSNumber {
            summary.bytes = size.int64Value
        }
        summary.wallTime = seconds(since: start)
        reportIfDue(progress, force: true)
        return summary
    }

    // MARK: Video

    func drainVideoDecoder() throws(FFmpegError) {
        while case let .frame(frame) = try summary.timings.measure(.decode, { () throws(FFmpegError) in try videoDecoder.receive() }) {
            summary.framesDecoded += 1
            try handleDecoded(frame)
        }
    }

    func handleDecoded(_ frame: Frame) throws(FFmpegError) {
        // Frames without a timestamp follow the previous one.
        let pts = frame.timestamp ?? ((lastSourcePts ?? videoOrigin) + max(lastSourceDuration, 1))
        let duration = frame.durationInStreamTimeBase > 0 ? frame.durationInStreamTimeBase
            : (lastSourcePts.map { pts - $0 > 0 ? pts - $0 : lastSourceDuration } ?? nominalFrameDuration)
        lastSourceDuration = duration > 0 ? duration : nominalFrameDuration
        lastSourcePts = pts
        let relative = pts - videoOrigin
        mediaTime = Double(relative + lastSourceDuration) * videoTimeBase.doubleValue

        if var selector {
            let ticks = selector.offer(frame, at: time(relative))
            self.selector = selector
            for tick in ticks { try emit(tick) }
        } else {
            // Timestamps kept: every frame once, strictly increasing.
            guard relative > lastOutputPts else { summary.framesDropped += 1; return }
            lastOutputPts = relative
            packetDurations[relative] = lastSourceDuration
            try encode(filtered(frame), pts: relative)
        }
    }

    var nominalFrameDuration: Int64 {
        max(1, Int64((1 / job.outputRate.doubleValue / videoTimeBase.doubleValue).rounded()))
    }

    func time(_ relative: Int64) -> MediaTime {
        MediaTime(value: relative, numerator: Int64(videoTimeBase.numerator), denominator: Int64(videoTimeBase.denominator))
    }

    func finishVideoTimeline() throws(FFmpegError) {
        guard var selector, let last = lastSourcePts else { return }
        let ticks = selector.finish(at: time(last - videoOrigin + lastSourceDuration))
        self.selector = selector
        for tick in ticks { try emit(tick) }
    }

    func emit(_ tick: FrameSelector<Frame>.Tick) throws(FFmpegError) {
        let input: Frame
        if tick.isNewFrame || lastEncodedInput == nil {
            input = try filtered(tick.payload)
            lastEncodedInput = input
        } else {
            // A repeat reuses the filtered picture: no second trip through the chain.
            input = lastEncodedInput!.newReference()
        }
        try encode(input, pts: tick.index)
    }

    /// The encoder's input for a decoded frame: filtered in RGB, or the frame itself on the fast path.
    func filtered(_ frame: Frame) throws(FFmpegError) -> Frame {
        if passthrough {
            let f = frame.newReference()
            f.clearPictureType()
            return f
        }
        do throws(MediaError) {
            try summary.timings.measure(.toRGB) { () throws(MediaError) in try toRGB!.convert(frame, into: sourceImage!) }
            let image = summary.timings.measure(.filter) { chainRenderer!.render(sourceImage!) }
            summary.framesFiltered += 1
            if let toYUV { return try summary.timings.measure(.toYUV) { () throws(MediaError) in try toYUV.convert(image) } }
            return try Frame(copying: image)
        } catch {
            if case let .processing(e) = error { throw e }
            throw FFmpegError(code: -1, operation: error.description)
        }
    }

    func encode(_ frame: Frame, pts: Int64) throws(FFmpegError) {
        frame.presentationTimestamp = pts
        try summary.timings.measure(.encode) { () throws(FFmpegError) in try videoEncoder.send(frame) }
        try drainVideoEncoder()
    }

    func drainVideoEncoder() throws(FFmpegError) {
        while case let .packet(packet) = try summary.timings.measure(.encode, { () throws(FFmpegError) in try videoEncoder.receive() }) {
            // libx264 leaves durations at zero; muxers want them.
            let pts = packet.presentationTimestamp ?? 0
            if selector != nil {
                packet.duration = 1
            } else {
                packet.duration = packetDurations.removeValue(forKey: pts) ?? lastSourceDuration
                summary.duration = max(summary.duration, Double(pts + packet.duration) * videoEncoder.timeBase.doubleValue)
            }
            summary.framesWritten += 1
            do throws(MediaError) {
                try summary.timings.measure(.mux) { () throws(MediaError) in
                    try muxer.write(packet, toStream: videoStreamIndex, timeBase: videoEncoder.timeBase)
                }
            } catch {
                throw Self.ffmpegError(error)
            }
        }
    }

    // MARK: Audio

    func handleAudio(_ packet: Packet) throws(FFmpegError) {
        guard let audioStreamIndex else { return }
        if let timeBase = audioCopyTimeBase {
            packet.shiftTimestamps(by: audioOrigin)
            do throws(MediaError) {
                try muxer.write(packet, toStream: audioStreamIndex, timeBase: timeBase)
            } catch {
                throw Self.ffmpegError(error)
            }
            return
        }
        guard let decoder = audioDecoder else { return }
        try decoder.send(packet)
        try drainAudioDecoder()
    }

    func drainAudioDecoder() throws(FFmpegError) {
        guard let decoder = audioDecoder, let converter = audioConverter else { return }
        while case let .frame(frame) = try decoder.receive() {
            if let ts = frame.timestamp { frame.presentationTimestamp = ts - audioOrigin }
            try converter.send(frame)
            try drainAudioConverter()
        }
    }

    func drainAudioConverter() throws(FFmpegError) {
        guard let converter = audioConverter, let encoder = audioEncoder else { return }
        while let frame = try converter.receive() {
            try encoder.send(frame)
            try drainAudioEncoder()
        }
    }

    func drainAudioEncoder() throws(FFmpegError) {
        guard let encoder = audioEncoder, let index = audioStreamIndex else { return }
        while case let .packet(packet) = try encoder.receive() {
            do throws(MediaError) {
                try muxer.write(packet, toStream: index, timeBase: encoder.timeBase)
            } catch {
                throw Self.ffmpegError(error)
            }
        }
    }

    func finishAudio() throws(FFmpegError) {
        guard let decoder = audioDecoder, let converter = audioConverter, let encoder = audioEncoder else { return }
        decoder.sendEndOfStream()
        try drainAudioDecoder()
        try converter.send(nil)
        try drainAudioConverter()
        try encoder.sendEndOfStream()
        try drainAudioEncoder()
    }

    // MARK: Helpers

    static func ffmpegError(_ error: MediaError) -> FFmpegError {
        if case let .processing(e) = error { return e }
        return FFmpegError(code: -1, operation: error.description)
    }

    func reportIfDue(_ progress: (JobProgress) -> Void, force: Bool = false) {
        let now = DispatchTime.now()
        guard force || now.uptimeNanoseconds - lastReport.uptimeNanoseconds > 250_000_000 else { return }
        lastReport = now
        let elapsed = seconds(since: start)
        progress(JobProgress(mediaTime: mediaTime, duration: demuxer.duration, framesDecoded: summary.framesDecoded,
                             framesWritten: summary.framesWritten,
                             framesPerSecond: elapsed > 0 ? Double(summary.framesWritten) / elapsed : 0,
                             speed: elapsed > 0 ? mediaTime / elapsed : 0, elapsed: elapsed))
    }

    func seconds(since t: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - t.uptimeNanoseconds) / 1e9
    }
}
