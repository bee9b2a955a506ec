import Foundation
import MediaIO

/// The audio of a job on its own, for the whole input: what the audio stage of a whole run writes
/// (copied or AAC, the same packets), into an audio-only output. A job split into shards processes
/// its audio once, here, so the joined output has no encoder priming or gap at the joins.
///
/// The video stream is not even read (the demuxer drops its packets).
public final class AudioTrackJob: @unchecked Sendable {
    public let plan: JobPlan
    private let demuxer: Demuxer
    private let lastTick: Int64?

    /// - Parameter configuration: the job's configuration, its output an `.mp4` (audio-only file) or
    ///   an `.m3u8` (an audio rendition on the job's segment schedule).
    ///   - lastTick: the video's last output tick, when known: an HLS rendition's audio after it
    ///     goes into the video's last segment rather than a segment of its own.
    ///   - interrupt: stops the open from another thread (it then throws).
    public init(configuration: JobConfiguration, lastTick: Int64? = nil, interrupt: InputInterrupt = InputInterrupt()) throws(JobError) {
        self.lastTick = lastTick
        do {
            var options = configuration.inputOptions
            // The input's metrics (the HLS reader's) carry the run's labels, as RunMetrics' do.
            options.metricDimensions = configuration.metricsLabels.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            demuxer = try Demuxer(url: configuration.input, options: options, interrupt: interrupt)
        } catch {
            throw .media(error)
        }
        var config = configuration
        config.shard = nil
        plan = try JobPlan(configuration: config, input: InputFacts(demuxer: demuxer, configuration: config,
                                                                    videoBitRate: demuxer.video.bitRate))
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
        let outputs: RunOutputs
        do throws(MediaError) {
            outputs = try RunOutputs(audioOnly: plan, lastTick: lastTick, timing: timing)
        } catch {
            throw .media(error)
        }
        demuxer.discardVideo()
        let reader = ReadStage(demuxer: demuxer, audioStream: plan.decodeSpec.audioStream, capacity: plan.decodeSpec.readCapacity, withVideo: false)
        let audio: AudioStage?
        do throws(MediaError) {
            audio = try AudioStage(plan: plan.audio, demuxer: demuxer, origin: plan.input.audioStart, input: reader.packets,
                                   outputs: outputs.audioTargets, stopDeadline: StopDeadline())
            try outputs.begin()
        } catch {
            outputs.discard()
            throw .media(error)
        }
        for mux in outputs.allMux { mux.start(in: group) }
        audio?.start(in: group)
        reader.start(in: group)
        // A cancelled caller (a stopped shard run) tears the stages down, the input's read included.
        await withTaskCancellationHandler { await group.wait() } onCancel: { group.cancel() }
        if Task.isCancelled {
            outputs.discard()
            throw .cancelled
        }
        do {
            if let error = group.error { throw error }
            try await group.perform("commit") { [outputs] in try outputs.commit() }
        } catch {
            outputs.discard()
            throw .media(asMediaError(error))
        }
        return Result(packets: outputs.allMux.reduce(0) { $0 + $1.packetsWritten }, bytes: outputs.committedBytes,
                      rendition: outputs.audioPlaylist)
    }
}
