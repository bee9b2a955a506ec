import Foundation
import MediaIO

/// The audio of a job on its own, for the whole input: what the audio stage of a whole run writes
/// (copied or AAC, the same packets), into an audio-only output. A job split into shards processes
/// its audio once, here, so the joined output has no encoder priming or gap at the joins.
///
/// The video stream is not even read (the demuxer drops its packets).
public final class AudioTrackJob {
    public let plan: JobPlan
    private let demuxer: Demuxer
    private let lastTick: Int64?

    /// - Parameter configuration: the job's configuration, its output an `.mp4` (audio-only file) or
    ///   an `.m3u8` (an audio rendition on the job's segment schedule).
    ///   - lastTick: the video's last output tick, when known: an HLS rendition's audio after it
    ///     goes into the video's last segment rather than a segment of its own.
    public init(configuration: JobConfiguration, lastTick: Int64? = nil) throws(JobError) {
        self.lastTick = lastTick
        do {
            demuxer = try Demuxer(url: configuration.input, options: configuration.inputOptions)
        } catch {
            throw .media(error)
        }
        var config = configuration
        config.shard = nil
        let facts = InputFacts(url: config.input, video: demuxer.video, audio: demuxer.audio, isLive: demuxer.isLive,
                               duration: demuxer.duration, videoBitRate: demuxer.video.bitRate)
        plan = try JobPlan(configuration: config, input: facts)
        guard plan.audio != .none else { throw .media(.invalidSettings("the job has no audio to process")) }
        guard plan.container == .mp4 || plan.container == .hls else {
            throw .media(.unsupportedOutput(config.output, reason: "an audio part is an .mp4 file or an .m3u8 rendition"))
        }
    }

    /// What the audio part holds.
    public struct Result: Sendable {
        public var packets: Int
        public var bytes: Int64
        /// An HLS rendition: its playlist as a master lists it (codecs, measured rates).
        public var rendition: HLSRendition?
    }

    /// Runs to the end of the input.
    public func run() async throws(JobError) -> Result {
        let timing = TimingRecorder()
        let group = StageGroup()
        let sink: any PacketSink
        do throws(MediaError) {
            switch plan.output {
            case let .hls(options, schedule, _):
                sink = try HLSWriter(playlistPath: plan.configuration.output, options: options, schedule: schedule,
                                     overwrite: plan.configuration.overwrite,
                                     lastSegment: lastTick.map { schedule.segment(ofTick: $0) })
            default:
                sink = try Muxer(path: plan.configuration.output, container: .mp4, options: ContainerOptions(faststart: false),
                                 overwrite: plan.configuration.overwrite)
            }
        } catch {
            throw .media(error)
        }
        demuxer.discardVideo()
        let mux = MuxStage(sink: sink, producers: 1, timing: timing)
        let reader = ReadStage(demuxer: demuxer, audioStream: demuxer.audio?.index, capacity: 64, withVideo: false)
        let audio: AudioStage?
        do throws(MediaError) {
            audio = try AudioStage(plan: plan.audio, demuxer: demuxer, input: reader.packets, outputs: [mux],
                                   stopDeadline: StopDeadline())
            try sink.begin()
        } catch {
            sink.discard()
            throw .media(error)
        }
        mux.start(in: group)
        audio?.start(in: group)
        reader.start(in: group)
        await group.wait()
        do throws(MediaError) {
            if let error = group.error { throw asMediaError(error) }
            try sink.commit()
        } catch {
            sink.discard()
            throw .media(error)
        }
        let rendition = (sink as? HLSWriter).map {
            $0.rendition(uri: URL(fileURLWithPath: plan.configuration.output).lastPathComponent)
        }
        return Result(packets: mux.packetsWritten, bytes: sink.bytesWritten, rendition: rendition)
    }
}
