import struct Foundation.Date
import class Foundation.ProcessInfo
import Filters
import MediaIO

/// What to do with the input's display-matrix rotation.
public enum OrientationPolicy: String, Sendable, CaseIterable {
    /// Turn the pixels upright before the chain (like ffmpeg's autorotate); the output has no rotation tag.
    case auto
    /// Leave the pixels as stored and copy the rotation tag, so players turn the picture.
    case keep
    /// Pixels as stored and no tag: for sources whose tag is wrong or handled by the chain
    /// (the camera presets turn the pixels themselves).
    case ignore
}

/// Everything one run needs: input, output, chain, encoding.
public struct JobConfiguration: Sendable {
    public var input: String
    public var output: String
    public var chain: FilterChain
    /// nil means `.auto`, unless a preset says otherwise.
    public var orientation: OrientationPolicy?
    /// An export preset; explicit settings in this configuration win over the preset's.
    public var preset: ExportPreset?
    /// Final dimensions rounded to a multiple (2, 8 or 16), by scaling, cropping or padding.
    public var alignment: Alignment?
    public var video = VideoEncoderSettings()
    public var audio: AudioSettings = .automatic
    /// Constant output rate with display-link semantics; nil keeps each frame's timestamp.
    public var frameRate: Rational?
    public var overwrite = false
    /// Make the output's missing folder (as `mkdir -p`; the CLI does). Off for the library: an
    /// embedding app decides where folders appear.
    public var createsOutputFolder = false
    public var inputOptions = InputOptions()
    /// Pace a file or VOD input like live, on the wall clock (restreaming a file as live HLS).
    public var realtime = false
    /// An output keyframe wherever the picture shown is an input keyframe (ffmpeg's
    /// `-force_key_frames source`): output GOPs start where the input's do. Every task of a split
    /// file job does this, so each shard's first picture is a keyframe of the single run too.
    public var keyframesAtSource = false
    /// Run the chain on RGB pictures even where it would give the same picture on the YUV planes.
    public var exactRGB = false
    /// The chain may change while the job runs (`TranscodeJob.chainControl`): the picture is always
    /// filtered, never passed through, so a change can take effect at any tick.
    public var chainControl = false
    /// On a live input, skip ahead (dropping frames) when the output falls this far behind the live edge.
    public var maxLatency: Duration = .seconds(10)
    /// HLS output settings (for a `.m3u8` output).
    public var hls = HLSOutputOptions()
    /// The output is served to players while it is written (`run --serve`): with no playlist type
    /// asked for, a file input's HLS output is EVENT (published after every segment, ENDLIST at
    /// the end) instead of VOD.
    public var servedWhileRunning = false
    /// The playlist type asked for; nil lets the input decide (live in, live out; else VOD, or
    /// EVENT when `servedWhileRunning`).
    public var hlsPlaylistType: HLSPlaylistKind? {
        didSet { if let t = hlsPlaylistType { hls.playlistType = t } }
    }
    /// An HLS ladder: one media playlist per rendition plus a master at the output path.
    public var renditions: [Rendition] = []
    /// Called, on a writer's thread, with the path of every file an HLS output publishes during the
    /// run (init segment, part, segment, media and master playlist), right after it appears: a
    /// server in the same process wakes the blocking playlist reloads and hinted-part requests it
    /// holds. It must return quickly.
    public var onFilePublished: (@Sendable (String) -> Void)?
    /// Stop after this many seconds of input (the output is finished normally).
    public var maxDuration: Double?
    /// A live input that delivers nothing for this long is lost (`--input-loss-after`, formerly
    /// `--stall-timeout`; default: 3 × target duration + 10 s). What then happens is `inputLoss`.
    public var stallTimeout: Duration?
    /// What a live channel does when its input is lost (`--on-input-loss`).
    public var inputLoss: InputLossPolicy = .end
    /// What a live run does when the machine cannot keep up (`--overload`; offline runs never shed).
    public var overload: OverloadPolicy = .adapt
    /// What becomes of the closed captions (ATSC A/53: CEA-608/708) in the source's pictures
    /// (`--captions`): kept through the chain, or removed.
    public var captions: CaptionPolicy = .keep
    /// Labels on every metric this job records through swift-metrics (e.g. `["stream": "cam1"]`
    /// when one process runs several jobs). Empty for the CLI's one job.
    public var metricsLabels: [String: String] = [:]

    /// One shard of a job split across machines: the part of the whole output this run makes
    /// (the Shards module plans it; nil for a whole run).
    public var shard: ShardWindow?
    /// Test hooks, read from the environment here, where the configuration is made (the plan
    /// passes them to the stages).
    public var faults = FaultInjection(environment: ProcessInfo.processInfo.environment)

    public init(input: String, output: String, chain: FilterChain = FilterChain()) {
        self.input = input
        self.output = output
        self.chain = chain
    }
}

/// What a run does with the source's closed captions (`--captions keep|drop`).
public enum CaptionPolicy: String, Sendable, CaseIterable, Codable {
    /// Every caption reaches the output, re-paced onto its pictures, none repeated or lost.
    case keep
    /// None does: for redaction jobs, which must remove what was said along with what was shown.
    case drop
}

/// The part of a job's output one shard makes, on the whole job's timeline, and where it starts reading.
public struct ShardWindow: Sendable, Equatable, Codable {
    /// Constant rate: output ticks `start..<end`. Timestamps kept: input presentation times
    /// (video time base, relative to the container's start) `start..<end`. `end` nil: to the end.
    public var start: Int64
    public var end: Int64?
    /// Where encoding starts, before `start` (same units): the encoder's rate control warms up on
    /// the pictures before the shard as a single run's had, then their packets are dropped and
    /// `start` is a keyframe. nil: encoding starts at `start`.
    public var encodeFrom: Int64?
    /// Where encoding ends, after `end` (exclusive): the encoder's look-ahead sees the pictures
    /// after the shard as a single run's does; their packets are dropped.
    public var encodeUntil: Int64?
    /// The presentation timestamp (video time base, as the container gives it) of the input
    /// keyframe reading starts at; nil reads from the beginning.
    public var seekKeyframe: Int64?
    /// The whole input's first frame time (video time base, relative to the container's start):
    /// output tick 0. Every shard keeps the whole job's grid.
    public var tickOrigin: Int64
    /// The number of this shard's first HLS segment, or first PNG file.
    public var firstSegment: Int
    public var firstImageNumber: Int

    public init(start: Int64, end: Int64?, encodeFrom: Int64? = nil, encodeUntil: Int64? = nil, seekKeyframe: Int64?,
                tickOrigin: Int64, firstSegment: Int = 0, firstImageNumber: Int = 1) {
        self.encodeUntil = encodeUntil
        (self.start, self.end, self.seekKeyframe, self.tickOrigin) = (start, end, seekKeyframe, tickOrigin)
        self.encodeFrom = encodeFrom
        (self.firstSegment, self.firstImageNumber) = (firstSegment, firstImageNumber)
    }
}

/// From which tick on the pictures took a path.
public struct VideoPathInterval: Sendable, Equatable {
    public var fromTick: Int64
    /// The same, in output seconds.
    public var seconds: Double
    public var path: JobSummary.VideoPath
}

/// A snapshot of a running job, for progress displays.
public struct JobProgress: Sendable {
    public enum Phase: String, Sendable, Codable { case running, finished, interrupted }
    public var phase: Phase = .running
    /// Output ticks so far (constant-rate runs), or frames written.
    public var ticks = 0
    public var filtered = 0
    public var dropped = 0
    public var repeated = 0
    /// Pictures the decoder skipped to shed load (`--overload adapt`).
    public var picturesNotDecoded = 0
    /// Closed-caption bytes (A/53 `cc_data`) so far: carried by the source's pictures, written
    /// onto the output's, and triplets the pacer had no room for.
    public var captions = CaptionCounts()
    /// Bytes written so far.
    public var bytes: Int64 = 0
    /// Wall time per pipeline stage so far.
    public var timings = StageTimings()
    /// Wall time per pass of the filter chain so far.
    public var filterPasses: [FilterPassTime] = []

    /// Seconds of input audio processed, when there is audio.
    public var audioTime: Double?
    /// Seconds of input processed.
    public var mediaTime: Double
    /// Input duration in seconds, when known.
    public var duration: Double?
    public var framesDecoded: Int
    public var framesWritten: Int
    /// Output frames per second of wall time.
    public var framesPerSecond: Double
    /// Media seconds per wall second.
    public var speed: Double
    public var elapsed: Double

    public init(mediaTime: Double, duration: Double?, framesDecoded: Int, framesWritten: Int,
                framesPerSecond: Double, speed: Double, elapsed: Double) {
        self.mediaTime = mediaTime
        self.duration = duration
        self.framesDecoded = framesDecoded
        self.framesWritten = framesWritten
        self.framesPerSecond = framesPerSecond
        self.speed = speed
        self.elapsed = elapsed
    }

    public var fraction: Double? {
        guard let duration, duration > 0 else { return nil }
        return min(1, max(0, mediaTime / duration))
    }

    /// Seconds left, at the current speed.
    public var estimatedTimeRemaining: Double? {
        guard let duration, speed > 0 else { return nil }
        return max(0, (duration - mediaTime) / speed)
    }
}

/// What a finished (or interrupted) run did.
public struct JobSummary: Sendable {
    public enum VideoPath: String, Sendable {
        case rgbChain = "decode → RGB chain → encode"
        case passthrough = "decode → encode (no RGB round trip)"
        case planar = "decode → chain on the YUV planes → encode (no RGB round trip)"
    }
    public enum AudioPath: String, Sendable { case copy = "copied", aac = "AAC re-encode", none = "none" }

    public var outputPath: String
    public var inputSize: FrameSize
    public var outputSize: FrameSize
    /// Set when the chain's size was odd and the encoder got it rounded down to even.
    public var roundedFrom: FrameSize?
    public var appliedRotation: Int
    /// The plan's path (the first interval's, when a run changed path).
    public var videoPath: VideoPath
    /// Every path the pictures took, from the tick it started at: one interval unless a live
    /// chain change re-planned it or a stream changed format mid-way.
    public var videoPaths: [VideoPathInterval] = []
    public var audioPath: AudioPath
    public var framesDecoded = 0
    /// Wall time per pass of the filter chain.
    public var filterPasses: [FilterPassTime] = []
    public var framesWritten = 0
    public var framesFiltered = 0
    /// Live chain changes, in the order they took effect (`ChainControl`).
    public var chainChanges: [ChainControl.Applied] = []
    public var framesDropped = 0
    public var framesRepeated = 0
    /// A shard's frames decoded from its keyframe only to reach its first picture.
    public var prerollFrames = 0
    public var decodeErrors = 0
    /// Output duration in seconds.
    public var duration: Double = 0
    public var bytes: Int64 = 0
    public var wallTime: Double = 0
    public var interrupted = false
    /// Wall time per pipeline stage.
    public var timings = StageTimings()
    /// The display-link clock's statistics, for constant-rate runs.
    public var ticks: TickStatistics?
    /// The variant read from a master playlist.
    public var variant: VariantInfo?
    public var inputWasLive = false
    /// An HLS input: what our reader did (reloads, retries, skipped segments).
    public var hlsInput: HLSInputStatistics?
    /// LL-HLS output of a live input: how long after its last picture each part was published,
    /// counted from that picture's tick (the display link had it) and from its input packet's arrival.
    public var partLatency: PartLatency?
    /// A live channel's input losses (`--on-input-loss hold|slate`): each one's start (wall clock
    /// and output time) and length.
    public var inputLosses: [InputLoss] = []
    /// What `--overload adapt` shed (live runs with it; nil otherwise).
    public var overload: OverloadSummary?
    /// The closed captions carried (`--captions`).
    public var captions = CaptionCounts()
    /// The source's ad markers and other timed ranges, each on the output tick that shows its
    /// picture (`--ad-markers`); cues whose picture never came (the input ended first).
    public var splices: [PlacedSplice] = []
    public var splicesUnplaced = 0
    /// A live input: when its newest pictures left the decoder, and how many came out before the
    /// decoder's reordering delay (`JobPlan.releasesHeldPictures`); nil for other inputs.
    public var decoding: LiveDecoding?

    public struct LiveDecoding: Sendable {
        /// Each picture's input timestamp (seconds, the input's own clock) and when it was decoded
        /// (Unix time): the newest 4096 to 8192.
        public var decodedAt: [(pts: Double, at: Double)]
        public var heldPicturesReleased: Int
    }

    public struct InputLoss: Sendable {
        public var began: Date
        public var outputTime: Double
        public var seconds: Double
    }

    public struct PartLatency: Sendable {
        public var parts: Int
        public var fromTickP50: Double, fromTickP95: Double
        public var fromInputP50: Double, fromInputP95: Double
    }
    /// Every playlist written (HLS), master first.
    public var outputs: [String] = []
    /// HLS: each media playlist as a master lists it (measured bit rates, size, rate, codecs).
    public var hlsRenditions: [HLSRendition] = []
    /// Non-fatal problems: late keyframes, lint findings on our own output.
    public var warnings: [String] = []
    /// Stopped at `maxDuration`.
    public var truncated = false
    /// Stopped and told not to keep anything (the output was removed).
    public var abandoned = false

    public var averageBitRate: Double { duration > 0 ? Double(bytes) * 8 / duration : 0 }
}

/// A run's closed-caption bytes (A/53 `cc_data` triplets, 3 bytes each).
public struct CaptionCounts: Sendable, Equatable {
    /// Bytes the source's pictures carried (shown or not), padding included.
    public var bytesIn = 0
    /// Bytes written onto the output's pictures (each rendition gets the same; counted once).
    public var bytesOut = 0
    /// Triplets dropped because more came than the output's pictures could carry for a minute.
    public var tripletsDropped = 0
    /// `--captions keep`.
    public var kept = true

    public init(bytesIn: Int = 0, bytesOut: Int = 0, tripletsDropped: Int = 0, kept: Bool = true) {
        (self.bytesIn, self.bytesOut, self.tripletsDropped, self.kept) = (bytesIn, bytesOut, tripletsDropped, kept)
    }
}

/// Why a job could not run or finish.
public enum JobError: Error, CustomStringConvertible, Sendable {
    case media(MediaError)
    case chain(FilterError)
    /// Stopped on request with the output removed.
    case cancelled

    public var description: String {
        switch self {
        case let .media(error): error.description
        case let .chain(error): "the filter chain does not fit this input: \(error)"
        case .cancelled: "cancelled; the output was removed"
        }
    }

    /// What the caller can do about it.
    public var recoverySuggestion: String {
        switch self {
        case let .media(error): error.recoverySuggestion
        case .chain: "change the chain so each filter fits the frame size it receives (see livefilter filters)"
        case .cancelled: "run the job again"
        }
    }
}

/// One rung of an HLS ladder: a box the picture fits in, and an average bitrate.
public struct Rendition: Sendable, Equatable, CustomStringConvertible {
    public var size: FrameSize
    public var bitRate: Int?

    public init(size: FrameSize, bitRate: Int?) {
        self.size = size
        self.bitRate = bitRate
    }

    /// Parses "1280x720@2800k" (bitrate optional: "640x360").
    public init?(parsing text: String) {
        let parts = text.lowercased().split(separator: "@", maxSplits: 1)
        let dims = parts[0].split(separator: "x")
        guard dims.count == 2, let w = Int(dims[0]), let h = Int(dims[1]), w >= 16, h >= 16, w <= 8192, h <= 8192 else { return nil }
        size = FrameSize(width: w, height: h)
        bitRate = nil
        if parts.count == 2 {
            var digits = Substring(parts[1])
            var multiplier = 1.0
            if digits.hasSuffix("k") { multiplier = 1e3; digits = digits.dropLast() } else if digits.hasSuffix("m") { multiplier = 1e6; digits = digits.dropLast() }
            guard let v = Double(digits), v > 0 else { return nil }
            bitRate = Int(v * multiplier)
        }
    }

    public var description: String { "\(size)" + (bitRate.map { "@\($0 / 1000)k" } ?? "") }
}

/// What a live run does when its input delivers nothing for the loss time (`--on-input-loss`).
public enum InputLossPolicy: Sendable, Equatable, CustomStringConvertible {
    /// The run ends (exit 9) with a finished output: a one-off job.
    case end
    /// The output keeps ticking on the last picture (the chain still applied at each tick's time),
    /// audio as silence, until the input comes back: a channel.
    case hold
    /// As `hold`, showing this PNG scaled to fit the input's picture.
    case slate(path: String)

    public var description: String {
        switch self {
        case .end: "end"
        case .hold: "hold"
        case let .slate(path): "slate=\(path)"
        }
    }

    /// Whether the output outlives the input's silence.
    public var keepsChannelUp: Bool { self != .end }
}
