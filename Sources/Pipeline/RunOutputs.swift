import Foundation
import HLS
import MediaIO

/// Every artifact one run writes, made from the plan: a container file, a PNG sequence, or HLS
/// media playlists (one per rendition) and a master. One life cycle for all of them: `begin`
/// (headers), writes through each output's mux stage, then `commit` (publish) or `discard`
/// (remove everything unfinished) — the one path every failed, cancelled or signalled run takes.
final class RunOutputs: @unchecked Sendable {
    /// One mux stage per encoded rendition, in the plan's order.
    let media: [MuxStage]
    private let plan: JobPlan
    private let file: AtomicOutput?
    private let sequence: AtomicImageSequence?
    private let muxer: Muxer?
    private let hls: [(writer: HLSWriter, uri: String)]
    private let masterPath: String?

    init(plan: JobPlan, timing: TimingRecorder) throws(MediaError) {
        self.plan = plan
        // Each output is fed by its rendition's encoder, and by the audio stage when there is audio.
        let producers = 1 + (plan.audio == .none ? 0 : 1)
        switch plan.output {
        case let .hls(options, _, masterPath):
            var writers: [(HLSWriter, String)] = []
            for rendition in plan.renditions {
                let path = rendition.playlistPath ?? plan.configuration.output
                let writer = try HLSWriter(playlistPath: path, options: options, overwrite: plan.configuration.overwrite)
                writers.append((writer, (path as NSString).lastPathComponent))
            }
            hls = writers
            self.masterPath = masterPath
            media = writers.map { MuxStage(sink: $0.0, producers: producers, timing: timing) }
            file = nil; sequence = nil; muxer = nil
        case let .imageSequence(pattern):
            let sequence = try AtomicImageSequence(pattern: pattern, overwrite: plan.configuration.overwrite)
            try sequence.create()
            let muxer = try Muxer(path: sequence.temporaryPattern, container: .pngSequence)
            muxer.displayPath = pattern
            self.sequence = sequence
            self.muxer = muxer
            media = [MuxStage(sink: muxer, producers: 1, timing: timing)]
            file = nil; hls = []; masterPath = nil
        case let .file(path, container):
            let output = try AtomicOutput(path: path, overwrite: plan.configuration.overwrite, temporaryExtension: container.rawValue)
            let muxer = try Muxer(path: output.temporaryPath, container: container)
            muxer.displayPath = path
            if container == .mp4 || container == .mov { muxer.headerOptions = [("movflags", "+faststart")] }
            file = output
            self.muxer = muxer
            media = [MuxStage(sink: muxer, producers: producers, timing: timing)]
            sequence = nil; hls = []; masterPath = nil
        }
    }

    func tagRotation(of mux: MuxStage, stream: Int, clockwiseDegrees: Double) {
        (mux.sink as? Muxer)?.setRotation(streamIndex: stream, clockwiseDegrees: clockwiseDegrees)
    }

    /// Headers, and a first master playlist for a ladder (players may look before a segment exists).
    func begin() throws(MediaError) {
        for stage in media { try stage.sink.writeHeader() }
        if masterPath != nil { try writeMaster() }
    }

    /// Finishes every output and publishes it: trailers, the final playlists, renames into place.
    func commit() throws(MediaError) {
        for stage in media { try stage.sink.finish() }
        try file?.commit()
        try sequence?.commit()
        if masterPath != nil { try writeMaster() }
    }

    /// Removes everything unfinished, whatever state the run stopped in.
    func discard() {
        for stage in media { stage.sink.discardUnfinished() }
        file?.discard()
        sequence?.discard()
    }

    var bytesWritten: Int64 { media.reduce(0) { $0 + $1.bytesWritten } }

    /// Every playlist written (HLS), master first.
    var playlists: [String] {
        if hls.isEmpty { return [] }
        guard let masterPath else { return [plan.configuration.output] }
        return [masterPath] + hls.map(\.writer.playlistPath)
    }

    /// `run` checks its own HLS output against RFC 8216 and the publishing rules.
    func lint() -> [String] {
        var warnings: [String] = []
        for entry in hls { warnings += entry.writer.warnings }
        for path in playlists {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            warnings += HLSLinter(profile: .livefilter).lint(text).violations.map { "\(path):\($0)" }
        }
        return warnings
    }

    /// The master playlist of a ladder, with bandwidths measured from the segments written.
    private func writeMaster() throws(MediaError) {
        guard let masterPath else { return }
        let hasAudio = plan.audio != .none
        let renditions = zip(hls, plan.renditions).map { entry, rendition in
            var r = entry.writer.rendition(uri: entry.uri)
            // Before any segment exists, the configured rate stands in (rewritten at the end).
            if r.peakBitRate == 0, let b = rendition.bitRate {
                r.peakBitRate = b * 6 / 5 + (hasAudio ? 128_000 : 0)
                r.averageBitRate = b + (hasAudio ? 128_000 : 0)
            }
            if r.resolution == nil { r.resolution = rendition.size }
            return r
        }
        try MasterPlaylistWriter(path: masterPath).write(renditions)
    }
}
