import Foundation
import Logging
import HLS
import MediaIO
import Pipeline

/// One task of a split job: a video shard, or the audio of the whole input.
public enum ShardTask: Sendable, Equatable, CustomStringConvertible {
    case video(Int)
    case audio

    /// "audio" or a shard number.
    public init?(parsing text: String) {
        if text == "audio" { self = .audio; return }
        guard let k = Int(text), k >= 0 else { return nil }
        self = .video(k)
    }

    /// The array index cluster engines give each task, in the order tried: Slurm array jobs,
    /// Kubernetes Indexed Jobs, AWS Batch array jobs.
    public static let indexVariables = ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX"]

    /// The task an array index stands for: 0..<N the video shards, N the audio task (when the plan
    /// has audio), so one array of `plan.taskCount` tasks runs everything but the join.
    public init?(arrayIndex: Int, plan: ShardPlan) {
        if arrayIndex >= 0, arrayIndex < plan.shards.count { self = .video(arrayIndex); return }
        if plan.audio, arrayIndex == plan.shards.count { self = .audio; return }
        return nil
    }

    /// The task from the environment, with the variable that named it.
    public static func fromEnvironment(_ environment: [String: String], plan: ShardPlan) throws(ShardError) -> (ShardTask, String)? {
        for name in indexVariables {
            guard let value = environment[name] else { continue }
            guard let index = Int(value), let task = ShardTask(arrayIndex: index, plan: plan) else {
                throw .noSuchShard(Int(value) ?? -1, count: plan.shards.count)
            }
            return (task, name)
        }
        return nil
    }

    public var description: String {
        switch self {
        case let .video(k): "shard \(k)"
        case .audio: "audio"
        }
    }

    var shardIndex: Int? { if case let .video(k) = self { k } else { nil } }
}

extension ShardPlan {
    /// Array tasks: the video shards, plus one for the audio.
    public var taskCount: Int { shards.count + (audio ? 1 : 0) }
}

/// Runs one task of a plan and publishes its part: written into a private folder, then renamed
/// into place with its manifest, replacing an earlier part of the same task (engines retry).
public enum ShardRunner {
    public static func run(plan: ShardPlan, task: ShardTask, configuration: JobConfiguration,
                           progress: @escaping @Sendable (JobProgress) -> Void = { _ in }) async throws(ShardError) -> PartManifest {
        if case let .video(k) = task, !(0..<plan.shards.count).contains(k) { throw .noSuchShard(k, count: plan.shards.count) }
        if task == .audio, !plan.audio { throw .cannotSplit("the plan has no audio task: its output has no audio") }
        try await checkIdentity(plan: plan, configuration: configuration)

        let start = Date()
        let cpuStart = cpuSeconds()
        let final = plan.partDirectory(task.shardIndex)
        let host = ProcessInfo.processInfo.hostName
        let scratch = final + ".tmp-\(host)-\(getpid())"
        let files = FileManager.default
        try? files.removeItem(atPath: scratch)
        removeAbandonedScratch(of: final, host: host)
        do {
            try files.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            try files.createDirectory(atPath: plan.workDirectory + "/logs", withIntermediateDirectories: true)
        } catch {
            throw .media(.outputNotWritable(scratch, reason: error.localizedDescription))
        }
        var finished = false
        defer { if !finished { try? files.removeItem(atPath: scratch) } }

        var config = configuration
        config.overwrite = true
        config.hlsPlaylistType = plan.hls == nil ? config.hlsPlaylistType : .vod
        var manifest = PartManifest(plan: plan.id, shard: task.shardIndex, host: host, finished: Date(), wallSeconds: 0,
                                    cpuSeconds: 0, frames: 0, prerollFrames: 0, files: [], playlists: [], bytes: 0)
        switch task {
        case let .video(k):
            config.shard = plan.window(of: k)
            config.audio = .none
            // Each shard starts with a keyframe; output GOPs that follow the input's put the single
            // run's keyframes there too (HLS has its segment cadence instead).
            if plan.hls == nil { config.keyframesAtSource = true }
            config.output = scratch + "/" + videoPartName(plan)
            let summary: JobSummary
            // A stopped task keeps nothing: its part is the whole shard or nothing.
            let session = ExportSession(config, onCancel: .removeOutput)
            let watcher = Task { for await p in session.progress { progress(p.details) } }
            defer { watcher.cancel() }
            do {
                summary = try await session.run()
            } catch {
                throw .job(error.underlying)
            }
            manifest.frames = summary.framesWritten
            // Decoded only to reach the range, plus encoded only to warm up or cool down.
            let made = summary.ticks?.ticks ?? summary.framesFiltered
            manifest.prerollFrames = summary.prerollFrames + max(0, made - summary.framesWritten)
            manifest.bytes = summary.bytes
            if let layout = plan.hls {
                manifest.playlists = try layout.video.map { name throws(ShardError) in
                    try partPlaylist(scratch, name, summary.hlsRenditions.first { $0.uri == name })
                }
            }
        case .audio:
            guard let audioName = plan.hls.map({ $0.audio }) ?? "audio.mp4" else { throw .cannotSplit("no audio rendition in the plan") }
            config.output = scratch + "/" + audioName
            let result: AudioTrackJob.Result
            do {
                let lastTick = plan.timing.mode == .ticks ? plan.timing.total - 1 : nil
                let opened: Result<AudioTrackJob, JobError> = await offThePool { [config] in
                    do throws(JobError) { return .success(try AudioTrackJob(configuration: config, lastTick: lastTick)) }
                    catch { return .failure(error) }
                }
                result = try await opened.get().run()
            } catch {
                throw .job(error)
            }
            manifest.frames = result.packets
            manifest.bytes = result.bytes
            if plan.hls != nil { manifest.playlists = [try partPlaylist(scratch, audioName, result.rendition)] }
        }
        // Every file the part holds (hidden temporaries of a failed writer are not part of it).
        manifest.files = ((try? files.contentsOfDirectory(atPath: scratch)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        manifest.wallSeconds = Date().timeIntervalSince(start)
        manifest.cpuSeconds = cpuSeconds() - cpuStart
        manifest.finished = Date()
        try manifest.write(to: scratch + "/part.json")
        try publish(scratch, as: final)
        finished = true
        Logger(label: "livefilter.shards").info("part published", metadata: [
            "task": "\(task)", "part": "\(final)", "frames": "\(manifest.frames)", "bytes": "\(manifest.bytes)",
            "cpu_seconds": "\(manifest.cpuSeconds)"])
        return manifest
    }

    /// The name a video shard writes: the final name of a PNG pattern or HLS playlist (so segment
    /// and frame names are the final ones), an MP4 part for container outputs (exact timestamps).
    static func videoPartName(_ plan: ShardPlan) -> String {
        if let layout = plan.hls {
            // A ladder's rung playlists are named after the output; a single rendition is its playlist.
            return layout.ladder ? URL(fileURLWithPath: plan.output).lastPathComponent : layout.video[0]
        }
        if plan.outputContainer == .pngSequence { return URL(fileURLWithPath: plan.output).lastPathComponent }
        return "video.mp4"
    }

    /// A part's media playlist as the join needs it: segments, their sizes, and master facts.
    static func partPlaylist(_ folder: String, _ name: String, _ rendition: HLSRendition?) throws(ShardError) -> PartManifest.PartPlaylist {
        let path = folder + "/" + name
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
              case let .media(media)? = try? PlaylistParser.parse(text) else {
            throw .partsInconsistent("the part's playlist \(path) is missing or unreadable")
        }
        let segments = media.segments.map { s in
            let size = (try? FileManager.default.attributesOfItem(atPath: folder + "/" + s.uri)[.size] as? NSNumber)?.intValue ?? 0
            return PartManifest.Segment(uri: s.uri, duration: s.duration, bytes: size)
        }
        return PartManifest.PartPlaylist(name: name, map: media.map?.uri, segments: segments, codecs: rendition?.codecs ?? "",
                                         width: rendition?.resolution?.width, height: rendition?.resolution?.height,
                                         frameRate: rendition?.frameRate?.doubleValue)
    }

    /// A task killed on this host (an engine's timeout, a lost node's retry) leaves its private
    /// folder behind: removed when its process is gone. Folders of other hosts are theirs.
    static func removeAbandonedScratch(of final: String, host: String) {
        let folder = (final as NSString).deletingLastPathComponent
        let prefix = (final as NSString).lastPathComponent + ".tmp-\(host)-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count)), kill(pid, 0) != 0, errno == ESRCH else { continue }
            try? FileManager.default.removeItem(atPath: folder + "/" + name)
        }
    }

    /// Renames the finished part into place; an earlier part of the same task is replaced.
    static func publish(_ scratch: String, as final: String) throws(ShardError) {
        let old = final + ".old-\(getpid())"
        if rename(final, old) != 0, errno != ENOENT {
            throw .media(.outputNotWritable(final, reason: String(cString: strerror(errno))))
        }
        guard rename(scratch, final) == 0 else {
            throw .media(.outputNotWritable(final, reason: String(cString: strerror(errno))))
        }
        try? FileManager.default.removeItem(atPath: old)
    }

    /// Refuses an input that is not the one the plan was made from.
    static func checkIdentity(plan: ShardPlan, configuration: JobConfiguration) async throws(ShardError) {
        let planned = plan.input
        if let path = ShardPlanner.localPath(configuration.input) {
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else {
                throw .inputChanged(configuration.input, reason: "it cannot be read on \(ProcessInfo.processInfo.hostName)")
            }
            let bytes = (attributes[.size] as? NSNumber)?.int64Value
            if let want = planned.bytes, bytes != want {
                throw .inputChanged(configuration.input, reason: "its size is \(bytes ?? -1) bytes, the plan's input had \(want)")
            }
        }
        let index: [UInt8]
        // Opened on a thread of its own: a disk or a network read does not block the cooperative pool.
        do { index = try await Demuxer.open(url: configuration.input, options: configuration.inputOptions).indexFingerprint } catch { throw .media(error) }
        let quick = ShardPlanner.quickHash(configuration, containerIndex: index)
        if quick != planned.quickHash {
            throw .inputChanged(configuration.input, reason: "its content differs from the plan's (index and ends hash \(quick), planned \(planned.quickHash))")
        }
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }
}
