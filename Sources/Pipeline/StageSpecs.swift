import Filters
import Foundation
import HLS
import MediaIO

// What each stage is told by the plan: a stage is built from its spec alone (and its channels),
// never from the `JobPlan` or the configuration, so no stage can decide a planned fact again.

/// How the input is read and decoded.
public struct DecodeSpec: Sendable, Equatable {
    /// The container's start in the video time base (`InputFacts.videoStart`): times are relative to it.
    public var origin: Int64
    /// The audio stream read and handed to the audio stage (nil: the plan has no audio).
    public var audioStream: Int?
    /// Sizes a frame without a duration of its own.
    public var nominalRate: Rational
    /// Packets the reader may queue: a live input gets room for minutes, so the reader keeps the
    /// live edge current while the pipeline catches up.
    public var readCapacity: Int
    /// A shard reads from this keyframe on (video time base, as the container gives it).
    public var seekKeyframe: Int64?
    /// A live HLS input's independent segments end with a mark the decoder drains at
    /// (`Demuxer.marksSegmentEnds`; `JobPlan.decodesSegmentsWhole`).
    public var marksSegmentEnds: Bool
    /// A live H.264 decoder gives up pictures held for reordering as soon as none can precede them.
    public var releasesHeldPictures: Bool
    /// A live input's decode times are kept for the report.
    public var recordsDecodeTimes: Bool
    /// A channel's pushed input is opened again when its connection ends (`Demuxer.reconnects`).
    public var reconnects: Bool
}

/// A live input's control: when it is lost, how it comes back, how far behind it may fall and
/// what is shed when the machine cannot keep up. Nil in a plan for offline inputs.
public struct LiveSpec: Sendable, Equatable {
    /// Silence longer than this is a loss (`--input-loss-after`).
    public var lossTime: Duration
    /// What a loss does: end the run, or keep the channel up on the last picture or a slate.
    public var inputLoss: InputLossPolicy
    /// A returning input's first frame is due this long after the tick it arrives at: the distance
    /// a live run joins behind the newest segment (one or three target durations; 0.5 s pushed),
    /// so the frames after it are not due the moment they arrive.
    public var resumeDelay: Duration
    /// The clock starts this long after the first frame, so a frame a little late is still on
    /// time: a pushed input's jitter (0.5 s), or an HLS segment published late when the run joined
    /// at the newest one (one target duration). Zero when an HLS run joins three segments back.
    public var startDelay: Duration
    /// The latency bound: further behind the live edge than this, the tick loop skips ahead.
    public var maxLatency: Duration
    /// Catching up after the join ends at the first wait for the network or after this long.
    public var catchUpBound: Duration
    /// `--overload adapt`: what is shed, in order (nil: `--overload off`).
    public var overload: OverloadPlan?
}

/// What the tick stage is told by the plan: how output time is made, which part of it this run
/// makes, where keyframes go, and a live input's control.
public struct TickSpec: Sendable {
    public var timing: OutputTiming
    /// A file paced on the wall clock (`--realtime`).
    public var realtime: Bool
    public var keyframes: KeyframeRule
    /// A shard's part: the ticks (or kept timestamps) fed to the encoder.
    public var fed: Range<Int64>?
    /// A shard on the tick clock: tick 0's input time, and the ticks to make.
    public var tickWindow: TickWindow?
    /// A shard that seeks: its first fed frame must be exactly its planned keyframe (timestamps kept).
    public var seeks: Bool
    /// Seconds of input after which the run ends normally (`--max-duration`).
    public var maxDuration: Double?
    /// A live input's control (nil: a file or VOD).
    public var live: LiveSpec?
    /// The input's URL, for messages.
    public var input: String
    /// What happens to the pictures' A/53 closed captions.
    public var captions: CaptionPlan
    public var isLive: Bool { live != nil }
}

/// What a run does with the ATSC A/53 closed captions (CEA-608/708) its source pictures carry,
/// decided once: kept (re-paced onto the output's pictures, written back by the encoder) or dropped
/// (`--captions drop`: a redaction job removes what was said), and what a master playlist says.
public struct CaptionPlan: Sendable, Equatable {
    /// `--captions keep`: every source picture's bytes reach the output, none twice.
    public var keeps: Bool
    /// Output pictures per second the bytes are paced onto: the tick rate, or with source
    /// timestamps the source's nominal rate (each picture then carries its own bytes).
    public var outputRate: Double
    /// A master playlist's CLOSED-CAPTIONS: the services the input told of, none, or unknown.
    public var declaration: ClosedCaptionDeclaration

    public init(keeps: Bool, outputRate: Double, declaration: ClosedCaptionDeclaration) {
        (self.keeps, self.outputRate, self.declaration) = (keeps, outputRate, declaration)
    }
}

/// The rule the video path is decided by, with the plan's facts: the plan's own path, and a live
/// chain change's re-plan (the filter stage asks it for the new chain's geometry).
public struct VideoPathRule: Sendable {
    public var video: VideoStreamInfo
    public var color: ColorDescription
    public var renditions: [RenditionPlan]
    public var imageSequence: Bool
    public var exactRGB: Bool
    public var controlled: Bool

    public func path(for geometry: OutputGeometry) -> VideoPath {
        JobPlan.videoPath(video: video, color: color, geometry: geometry, renditions: renditions,
                          imageSequence: imageSequence, exactRGB: exactRGB, controlled: controlled)
    }
}

/// What the filter stage is told by the plan.
public struct FilterSpec: Sendable {
    public var path: VideoPath
    public var geometry: OutputGeometry
    public var input: VideoStreamInfo
    public var color: ColorDescription
    /// Each rendition's picture size, in the plan's order.
    public var renditionSizes: [FrameSize]
    /// PNG: the encoder takes RGB.
    public var rgbEncoder: Bool
    /// `--on-input-loss slate=FILE`: the slate shown while the input is lost.
    public var slate: String?
    /// Output seconds per pts unit (the encode time base), and whether pts counts ticks.
    public var timeBase: Rational
    public var constantRate: Bool
    public var replan: VideoPathRule
    /// Fault injection: each new picture takes this much longer (`FaultInjection`).
    public var slowPictureMilliseconds: UInt32?
}

/// What one rendition's encode stage is told by the plan.
public struct EncodeSpec: Sendable, Equatable {
    public enum Codec: Sendable, Equatable {
        /// An image sequence's frames.
        case png
        case h264(VideoEncoderSettings)
    }

    public var size: FrameSize
    public var codec: Codec
    public var frameRate: Rational
    /// Encoded timestamps count ticks on the tick clock, else keep the input's time base.
    public var timeBase: Rational
    public var color: ColorDescription
    public var constantRate: Bool
    /// A shard's range: packets outside it (the warm-up and look-ahead) are dropped.
    public var keep: Range<Int64>?
    /// `--orientation keep`: the input's display matrix, tagged on the output's stream.
    public var displayMatrix: DisplayMatrix?
    /// `--overload adapt`: the settings each preset of the plan's ladder (the asked one included,
    /// for a step back) reopens the encoder with at a keyframe, the stream's parameter sets kept.
    /// Empty: the encoder is never reopened.
    public var presetSteps: [EncoderSpeedPreset: VideoEncoderSettings]
    /// Fault injection: the encoder fails after this many frames (`FaultInjection`).
    public var failsAfter: Int?

    public var preset: EncoderSpeedPreset? { if case let .h264(settings) = codec { settings.speedPreset } else { nil } }
}

/// Where a run writes: every path, decided by the plan.
public struct OutputSpec: Sendable {
    public struct HLS: Sendable {
        public var options: HLSOutputOptions
        public var schedule: SegmentSchedule
        /// LL-HLS: ticks per part; nil without parts (and for a VOD playlist, which appears whole).
        public var partTicks: Int64?
        /// Each rendition's media playlist, in the plan's order.
        public var playlists: [String]
        public var masterPath: String?
        /// What the master says of closed captions (`CaptionPlan.declaration`).
        public var closedCaptions: ClosedCaptionDeclaration
        /// A ladder's audio rendition (EXT-X-MEDIA): its media playlist beside the master.
        public var audioPlaylist: String?
        public var firstSegment: Int
    }

    public enum Kind: Sendable {
        case file(path: String, container: OutputContainer, faststart: Bool)
        case imageSequence(pattern: String, firstNumber: Int)
        case hls(HLS)
        case discard
    }

    public var kind: Kind
    /// The output as asked (`-o`).
    public var path: String
    /// Make the output's missing folder (the CLI asks).
    public var createsFolder: Bool
    public var overwrite: Bool
    /// An audio-only output (`AudioTrackJob`): an MP4 with its index at the end (the join reads
    /// it, no player does), or the HLS audio rendition at `path`.
    public var audioOnlyFaststart: Bool
    public var onFilePublished: (@Sendable (String) -> Void)?
}
