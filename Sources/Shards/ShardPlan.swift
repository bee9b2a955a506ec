import Foundation
import MediaIO
import Pipeline

/// A job split into shards, as a file (`livefilter.plan/1`): what the input was, the options, the
/// whole job's timeline, and each shard's part of it. Every task of a cluster job reads the same
/// plan; nothing else is shared between them but the file system the parts are written to.
public struct ShardPlan: Codable, Sendable, Equatable {
    public static let currentFormat = "livefilter.plan/1"

    public var format: String
    /// Names this plan's parts: a part written for another plan is not taken by `join`.
    public var id: String
    public var created: Date
    public var input: InputIdentity
    /// The output, absolute.
    public var output: String
    /// `OutputContainer.rawValue`: mp4, mov, mkv, ts, m3u8 or png.
    public var container: String
    public var overwrite: Bool
    /// The command line that made the plan, after `livefilter` (every task parses it again: one
    /// meaning for all), and the folder it was typed in (relative paths in it are relative to that).
    public var arguments: [String]
    public var directory: String
    /// The parts, logs and the join lock: next to the output, on the file system the tasks share.
    public var workDirectory: String
    public var timing: Timing
    /// HLS output: segment duration in seconds.
    public var segmentDuration: Double?
    /// HLS: the final playlists' names (in the output's folder).
    public var hls: HLSLayout?
    /// Whether the output has audio, processed once for the whole input by the audio task.
    public var audio: Bool
    /// Shards asked for; `shards` may hold fewer (a file with fewer keyframes, a short HLS output).
    public var requested: Int
    public var shards: [Shard]

    /// The output timeline every shard keeps.
    public struct Timing: Codable, Sendable, Equatable {
        public enum Mode: String, Codable, Sendable {
            /// Constant rate: shards are ranges of output ticks.
            case ticks
            /// Timestamps kept: shards are ranges of input presentation times.
            case timestamps
        }
        public var mode: Mode
        /// Output frame rate ("30000/1001").
        public var rate: String
        /// The input video stream's time base ("1/15360"): unit of `origin` and of timestamp ranges.
        public var timeBase: String
        /// The first frame's time relative to the container's start, in `timeBase` units: tick 0.
        public var origin: Int64
        /// Output ticks (or frames) of the whole job, as planned.
        public var total: Int64
    }

    /// The playlists of a sharded HLS output. With audio (or a ladder) there is a master at the
    /// output path, listing the video playlists and an EXT-X-MEDIA audio rendition; without, the one
    /// video playlist is the output, as a single run writes it.
    public struct HLSLayout: Codable, Sendable, Equatable {
        public var master: String?
        public var ladder: Bool
        public var video: [String]
        public var audio: String?
        public var targetDuration: Int
        public var audioChannels: Int?
    }

    /// One shard: its range, where its reading starts, and how its part is numbered.
    public struct Shard: Codable, Sendable, Equatable {
        public var index: Int
        /// Ticks (or input times) `start..<end`; the last shard's `end` is nil (to the end of the input).
        public var start: Int64
        public var end: Int64?
        /// Where encoding starts (warm-up: those pictures' packets are dropped); nil: at `start`.
        public var encodeFrom: Int64?
        /// Where encoding ends after `end` (cool-down: look-ahead sees what follows; packets dropped).
        public var encodeUntil: Int64?
        /// Presentation timestamp of the input keyframe the shard reads from; nil: from the start.
        public var seekKeyframe: Int64?
        public var firstSegment: Int
        public var firstImageNumber: Int
        /// Output frames planned, and input frames decoded (and warm-up pictures encoded) only to
        /// reach the first: the work done twice (pre-roll).
        public var frames: Int64
        public var prerollFrames: Int
    }

    public var outputContainer: OutputContainer { OutputContainer(rawValue: container) ?? .mp4 }

    /// Shard `index`'s window on the whole job's timeline.
    public func window(of index: Int) -> ShardWindow {
        let s = shards[index]
        return ShardWindow(start: s.start, end: s.end, encodeFrom: s.encodeFrom, encodeUntil: s.encodeUntil, seekKeyframe: s.seekKeyframe,
                           tickOrigin: timing.origin, firstSegment: s.firstSegment, firstImageNumber: s.firstImageNumber)
    }

    // MARK: Files

    public static func read(_ path: String) throws(ShardError) -> ShardPlan {
        guard let data = FileManager.default.contents(atPath: path) else { throw .planUnreadable(path, reason: "no such file") }
        let plan: ShardPlan
        do {
            plan = try decoder.decode(ShardPlan.self, from: data)
        } catch {
            throw .planUnreadable(path, reason: "not a livefilter plan (\(error))")
        }
        guard plan.format == currentFormat else {
            throw .planUnreadable(path, reason: "format '\(plan.format)', this livefilter reads '\(currentFormat)'")
        }
        return plan
    }

    public func write(to path: String) throws(ShardError) {
        do {
            try AtomicFile.write(Array(try Self.encoder.encode(self)), to: path, displayPath: path)
        } catch let error as MediaError {
            throw .media(error)
        } catch {
            throw .planUnreadable(path, reason: "\(error)")
        }
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        e.dateEncodingStrategy = .iso8601
        return e
    }()

    static let decoder: JSONDecoder = {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        return d
    }()

    // MARK: The work directory's layout

    /// Where shard `index` (or the audio task, `nil`) writes its part.
    public func partDirectory(_ shard: Int?) -> String {
        workDirectory + "/" + (shard.map { "shard-\($0)" } ?? "audio")
    }

    public func manifestPath(_ shard: Int?) -> String { partDirectory(shard) + "/part.json" }

    /// A task's log, when a cluster engine writes one: named by its array index (the audio task is
    /// the last index).
    public func logPath(_ shard: Int?) -> String {
        workDirectory + "/logs/task-\(shard ?? shards.count).log"
    }

    /// Progress a running task reports (output frames so far), for the engine's summed progress.
    public func progressPath(_ shard: Int?) -> String {
        workDirectory + "/progress/" + (shard.map { "shard-\($0)" } ?? "audio")
    }

    public var joinLogPath: String { workDirectory + "/logs/join.log" }

    /// The default work directory of an output: `NAME.parts` next to it (a PNG pattern's '%' dropped).
    public static func defaultWorkDirectory(forOutput output: String) -> String {
        let url = URL(fileURLWithPath: output)
        let name = url.lastPathComponent.replacingOccurrences(of: "%", with: "")
        return url.deletingLastPathComponent().appendingPathComponent(name + ".parts").path
    }
}

/// What identifies an input: a shard refuses to run on anything else.
public struct InputIdentity: Codable, Sendable, Equatable {
    public var url: String
    /// Local files: size and modification time.
    public var bytes: Int64?
    public var modified: Double?
    /// The container's index (MP4 sample tables, Matroska cues) and the file's first and last
    /// 64 KiB: cheap to check at every shard's start.
    public var quickHash: String
    /// Every video packet's timestamps, size and flags, from the planner's scan.
    public var indexHash: String
    public var videoPackets: Int
    public var duration: Double?
}

/// What a finished part holds; written last, atomically: its presence means the part is complete.
public struct PartManifest: Codable, Sendable, Equatable {
    public var plan: String
    /// nil for the audio task.
    public var shard: Int?
    public var host: String
    public var finished: Date
    public var wallSeconds: Double
    public var cpuSeconds: Double
    /// Output frames (video), or audio packets.
    public var frames: Int
    public var prerollFrames: Int
    /// The part's files, relative to its directory (segments, PNGs, the video or audio file).
    public var files: [String]
    /// HLS: the part's media playlists (one per rendition, or the audio rendition's).
    public var playlists: [PartPlaylist]
    public var bytes: Int64

    public struct Segment: Codable, Sendable, Equatable {
        public var uri: String
        public var duration: Double
        public var bytes: Int
    }

    /// One media playlist of a part: its segments, and what a master says of it.
    public struct PartPlaylist: Codable, Sendable, Equatable {
        public var name: String
        /// fMP4: the init segment.
        public var map: String?
        public var segments: [Segment]
        public var codecs: String
        public var width: Int?
        public var height: Int?
        public var frameRate: Double?
    }

    public static func read(_ path: String) -> PartManifest? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? ShardPlan.decoder.decode(PartManifest.self, from: data)
    }

    func write(to path: String) throws(ShardError) {
        do {
            try AtomicFile.write(Array(try ShardPlan.encoder.encode(self)), to: path, displayPath: path)
        } catch let error as MediaError {
            throw .media(error)
        } catch {
            throw .media(.outputNotWritable(path, reason: "\(error)"))
        }
    }
}

/// Why planning, a shard, the audio task or the join failed, in words that say what to do.
public enum ShardError: Error, CustomStringConvertible, Sendable {
    case planUnreadable(String, reason: String)
    case cannotSplit(String)
    case noSuchShard(Int, count: Int)
    case inputChanged(String, reason: String)
    /// Parts missing or incomplete at join: (shard or nil for audio, its log).
    case partsMissing([(shard: Int?, log: String)], workDirectory: String)
    case joinInProgress(String, holder: String)
    case partsInconsistent(String)
    case media(MediaError)
    case job(JobError)
    case cluster(String)

    public var description: String {
        switch self {
        case let .planUnreadable(path, reason): "cannot read the plan '\(path)': \(reason)"
        case let .cannotSplit(reason): "this job cannot be split into shards: \(reason)"
        case let .noSuchShard(k, count): "shard \(k) is not in the plan (it has shards 0–\(count - 1) and 'audio')"
        case let .inputChanged(url, reason): "input '\(url)' is not the input the plan was made from: \(reason)"
        case let .partsMissing(parts, dir):
            "the join needs every part; missing or incomplete: "
                + parts.map { ($0.shard.map { "shard \($0)" } ?? "audio") + " (log: \($0.log))" }.joined(separator: ", ")
                + ". Parts are read from \(dir): every task must write to a file system the join can read"
        case let .joinInProgress(lock, holder): "another join of this plan is running (\(holder), lock \(lock))"
        case let .partsInconsistent(reason): "the parts do not fit together: \(reason)"
        case let .media(error): error.description
        case let .job(error): error.description
        case let .cluster(reason): reason
        }
    }

    public var recoverySuggestion: String {
        switch self {
        case .planUnreadable: "make the plan with livefilter plan INPUT -o OUTPUT --shards N --plan PLAN.json"
        case .cannotSplit: "run the job on one machine (livefilter run), or change the options named"
        case .noSuchShard: "pass --shard K with K from the plan, or 'audio'"
        case .inputChanged: "make the plan again (livefilter plan …) and run every shard of the new plan"
        case .partsMissing: "run the missing shards again (livefilter run --plan PLAN --shard K), then join"
        case .joinInProgress: "wait for it; if no join is running, remove the lock file"
        case .partsInconsistent: "run every shard of this plan again, then join"
        case let .media(error): error.recoverySuggestion
        case let .job(error): error.recoverySuggestion
        case .cluster: "check the cluster (sinfo, squeue) and the log named, if any"
        }
    }
}
