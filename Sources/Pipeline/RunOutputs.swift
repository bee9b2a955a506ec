import Foundation
import HLS
import MediaIO

/// Every artifact one run writes, made from the plan: a container file, a PNG sequence, or HLS
/// media playlists (one per rendition) and a master. One life cycle for all of them
/// (`OutputArtifact`): `begin` (headers), writes through each output's mux stage, then `commit`
/// (publish) or `discard` (remove everything unfinished) — the one path every failed, cancelled or
/// signalled-and-abandoned run takes.
final class RunOutputs: @unchecked Sendable {
    /// One mux stage per encoded rendition, in the plan's order (none for `-o null`).
    let media: [MuxStage]
    /// A ladder's audio rendition (EXT-X-MEDIA): audio written once, not into every rung.
    let audioRendition: MuxStage?
    private let plan: JobPlan
    private let hls: [(writer: HLSWriter, uri: String)]
    /// The run's splices, shared by every HLS writer (each rendition's, the audio rendition's); the
    /// tick stage schedules them. None for other outputs: there a splice is only a keyframe.
    let splices: SpliceBoard?

    /// Calls `body` after every LL-HLS part the first rendition publishes (one rung stands for all).
    func onPartPublished(_ body: @escaping @Sendable (HLSPartRecord) -> Void) {
        hls.first?.writer.onPartPublished = { record, _ in body(record) }
    }

    /// Calls `body` after every video segment any rendition publishes during the run.
    func onSegmentPublished(_ body: @escaping @Sendable (HLSSegmentRecord) -> Void) {
        for (writer, _) in hls { writer.onSegmentPublished = body }
    }

    /// The input's wall-clock time of the picture a tick shows (an HLS input's program date-time),
    /// for every playlist's EXT-X-PROGRAM-DATE-TIME.
    func useSourceDates(_ date: @escaping @Sendable (Int64) -> Date?) {
        for (writer, _) in hls { writer.sourceDate = date }
        audioWriter?.writer.sourceDate = date
    }
    private let audioWriter: (writer: HLSWriter, uri: String)?
    private let master: MasterPlaylistWriter?

    /// Folders this run made for its output (outermost first): removed again, if still empty, by `discard`.
    private let createdFolders: [String]

    /// Checks every destination; creates nothing but, when the configuration asks (the CLI: users
    /// expect `-o out/hls/index.m3u8` to make `out/hls`, as `mkdir -p` would), the output's folder.
    init(plan: JobPlan, timing: TimingRecorder) throws(MediaError) {
        self.plan = plan
        let spec = plan.outputSpec
        createdFolders = spec.createsFolder ? try OutputFolder.make(of: spec.path) : []
        let overwrite = spec.overwrite
        // Each output is fed by its rendition's encoder, and by the audio stage when there is audio.
        let producers = 1 + (plan.audio == .none ? 0 : 1)
        switch spec.kind {
        case let .hls(hlsSpec):
            let options = hlsSpec.options
            var writers: [(HLSWriter, String)] = []
            for path in hlsSpec.playlists {
                let writer = try HLSWriter(playlistPath: path, options: options, schedule: hlsSpec.schedule, overwrite: overwrite,
                                           partTicks: hlsSpec.partTicks, firstSegmentNumber: hlsSpec.firstSegment)
                writers.append((writer, (path as NSString).lastPathComponent))
            }
            hls = writers
            for (writer, _) in writers { writer.onFilePublished = spec.onFilePublished }
            master = try hlsSpec.masterPath.map { path throws(MediaError) in
                try MasterPlaylistWriter(path: path, overwrite: overwrite, publishesDuringRun: options.playlistType != .vod,
                                         closedCaptions: hlsSpec.closedCaptions)
            }
            // A ladder's audio rendition, every rung plays with it.
            if let path = hlsSpec.audioPlaylist {
                let writer = try HLSWriter(playlistPath: path, options: options, schedule: hlsSpec.schedule, overwrite: overwrite,
                                           partTicks: hlsSpec.partTicks)
                writer.onFilePublished = spec.onFilePublished
                audioWriter = (writer, (path as NSString).lastPathComponent)
                audioRendition = MuxStage(sink: writer, producers: 1, timing: timing)
                media = writers.map { MuxStage(sink: $0.0, producers: 1, timing: timing) }
            } else {
                audioWriter = nil
                audioRendition = nil
                media = writers.map { MuxStage(sink: $0.0, producers: producers, timing: timing) }
            }
            // Only where markers may come: a file without a SCTE-35 stream keeps its TS as it was.
            let board = plan.input.mayCarryAdMarkers ? SpliceBoard() : nil
            for (writer, _) in writers { writer.spliceBoard = board }
            audioWriter?.writer.spliceBoard = board
            splices = board
            // LL-HLS: each media playlist reports how far the ladder's others have got.
            if hlsSpec.masterPath != nil, hlsSpec.partTicks != nil {
                let all = writers.map(\.1) + (audioWriter.map { [$0.uri] } ?? [])
                let progress = HLSRenditionProgress(playlists: all)
                for (writer, _) in writers { writer.renditionProgress = progress }
                audioWriter?.writer.renditionProgress = progress
            }
        case let .imageSequence(pattern, firstNumber):
            let sink = try ImageSequenceWriter(pattern: pattern, overwrite: overwrite, firstNumber: firstNumber)
            media = [MuxStage(sink: sink, producers: 1, timing: timing)]
            hls = []; master = nil; audioWriter = nil; audioRendition = nil; splices = nil
        case let .file(path, container, faststart):
            let sink = try Muxer(path: path, container: container, options: ContainerOptions(faststart: faststart), overwrite: overwrite)
            media = [MuxStage(sink: sink, producers: producers, timing: timing)]
            hls = []; master = nil; audioWriter = nil; audioRendition = nil; splices = nil
        case .discard:
            media = []
            hls = []; master = nil; audioWriter = nil; audioRendition = nil; splices = nil
        }
    }

    /// The outputs of a job's audio alone (`AudioTrackJob`, a split job's audio task): an HLS audio
    /// rendition on the plan's schedule, or an audio-only MP4 (its index at the end: the join
    /// reads it, no player does). `lastTick`: the video's last output tick, when known; audio after
    /// it goes into the video's last segment rather than a segment of its own.
    init(audioOnly plan: JobPlan, lastTick: Int64?, timing: TimingRecorder) throws(MediaError) {
        self.plan = plan
        createdFolders = []
        let spec = plan.outputSpec
        let path = spec.path
        switch spec.kind {
        case let .hls(hlsSpec):
            let schedule = hlsSpec.schedule
            let writer = try HLSWriter(playlistPath: path, options: hlsSpec.options, schedule: schedule, overwrite: spec.overwrite,
                                       partTicks: hlsSpec.partTicks, lastSegment: lastTick.map { schedule.segment(ofTick: $0) })
            audioWriter = (writer, (path as NSString).lastPathComponent)
            audioRendition = MuxStage(sink: writer, producers: 1, timing: timing)
            media = []
        default:
            let muxer = try Muxer(path: path, container: .mp4, options: ContainerOptions(faststart: spec.audioOnlyFaststart),
                                  overwrite: spec.overwrite)
            audioWriter = nil
            audioRendition = nil
            media = [MuxStage(sink: muxer, producers: 1, timing: timing)]
        }
        hls = []
        master = nil
        // A split job's audio task: no splices are placed (the shards carry no markers yet).
        splices = nil
    }

    /// Every mux stage: the renditions', then the audio rendition's.
    var allMux: [MuxStage] { media + (audioRendition.map { [$0] } ?? []) }
    /// Where the audio stage writes: the audio rendition, else every output.
    var audioTargets: [MuxStage] { audioRendition.map { [$0] } ?? media }

    /// Every artifact, the master last.
    private var artifacts: [any OutputArtifact] { allMux.map(\.sink) + (master.map { [$0] } ?? []) }

    /// `--orientation keep`: container files carry the input's display matrix (HLS and PNG have none).
    func tagDisplayMatrix(of mux: MuxStage, stream: Int, _ matrix: DisplayMatrix) {
        (mux.sink as? Muxer)?.setDisplayMatrix(streamIndex: stream, matrix)
    }

    /// Headers; a live or event ladder's master is published at once (players may look before a segment exists).
    func begin() throws(MediaError) {
        do {
            for artifact in artifacts { try artifact.begin() }
            if let master {
                master.renditions = masterRenditions()
                try master.publish()
            }
        } catch {
            discard()
            throw error
        }
    }

    /// Finishes every output and publishes it: trailers, the final playlists, renames into place.
    func commit() throws(MediaError) {
        for stage in allMux { try stage.sink.commit() }
        if let master {
            master.renditions = masterRenditions()
            try master.commit()
        }
    }

    /// Removes everything unfinished, whatever state the run stopped in (see `OutputArtifact.discard`),
    /// and the folders the run made if nothing else is in them.
    func discard() {
        for artifact in artifacts.reversed() { artifact.discard() }
        for folder in createdFolders.reversed() { rmdir(folder) }
    }

    /// Bytes written so far, as the mux stages last saw them (safe from any thread).
    var bytesWritten: Int64 { allMux.reduce(0) { $0 + $1.bytesWritten } }

    /// The finished outputs' bytes (trailers and indexes included); read after `commit`.
    var committedBytes: Int64 { allMux.reduce(0) { $0 + $1.sink.bytesWritten } }

    /// Every playlist written (HLS), master first.
    var playlists: [String] {
        if hls.isEmpty { return [] }
        guard let master else { return [plan.outputPath] }
        return [master.path] + hls.map(\.writer.playlistPath) + (audioWriter.map { [$0.writer.playlistPath] } ?? [])
    }

    /// Each media playlist as a master lists it (read after `commit`).
    var hlsRenditions: [HLSRendition] { hls.map { $0.writer.rendition(uri: $0.uri) } }

    /// The audio rendition's playlist as a master lists it (read after `commit`).
    var audioPlaylist: HLSRendition? { audioWriter.map { $0.writer.rendition(uri: $0.uri) } }

    /// `run` checks its own HLS output against RFC 8216 and the publishing rules.
    func lint() -> [String] {
        var warnings: [String] = []
        for entry in hls { warnings += entry.writer.warnings }
        if let audioWriter { warnings += audioWriter.writer.warnings }
        for path in playlists {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            warnings += HLSLinter(profile: .livefilter).lint(text).violations.map { "\(path):\($0)" }
        }
        return warnings
    }

    /// The ladder's renditions, with bandwidths measured from the segments written (a rung's with
    /// the audio rendition's added: a player fetches both).
    private func masterRenditions() -> [HLSRendition] {
        let hasAudio = plan.audio != .none
        let audio = audioWriter.map { $0.writer.rendition(uri: $0.uri) }
        if let master, let audioWriter {
            master.media = [AlternativeRendition(groupID: "audio", name: "audio", channels: plan.audioChannels, uri: audioWriter.uri)]
        }
        // The planned audio rate, or the measured one once there is a segment of it.
        let audioRate = hasAudio ? plan.audioBitRate ?? 0 : 0
        return zip(hls, plan.renditions).map { entry, rendition in
            var r = entry.writer.rendition(uri: entry.uri)
            // Before any segment exists, the planned rates stand in (rewritten at the end). The
            // rung's peak is its encoder's maxrate: VBV caps every segment's rate at it.
            if r.peakBitRate == 0, let b = rendition.bitRate {
                r.peakBitRate = (rendition.encoder.maxRate ?? b) + audioRate
                r.averageBitRate = b + audioRate
            } else if let audio {
                r.peakBitRate += audio.peakBitRate
                r.averageBitRate += audio.averageBitRate
            }
            if let audio {
                r.audioGroup = "audio"
                r.codecs = [r.codecs, audio.codecs].filter { !$0.isEmpty }.joined(separator: ",")
            }
            if r.resolution == nil { r.resolution = rendition.size }
            return r
        }
    }
}
