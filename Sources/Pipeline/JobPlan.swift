import Broadcast
import Filters
import Foundation
import HLS
import MediaIO

/// What the planner needs to know about an input: facts copied out of the demuxer, no handles.
public struct InputFacts: Sendable {
    public var url: String
    public var video: VideoStreamInfo
    public var audio: AudioStreamInfo?
    public var isLive: Bool
    /// Seconds, when the container knows.
    public var duration: Double?
    /// The video bit rate stated or measured (presets that follow the source's rate read it).
    public var videoBitRate: Int?
    /// The container's start (MPEG-TS and HLS start near 1.4 s) in the video stream's time base,
    /// exact: every video timestamp is made relative to it.
    public var videoStart: Int64
    /// The same start in the audio stream's time base.
    public var audioStart: Int64
    /// A live HLS input's EXT-X-TARGETDURATION, when it could be read (the default stall timeout).
    public var targetDuration: Int?
    /// The closed-caption services the input told of (an HLS master's CLOSED-CAPTIONS group, a
    /// file's first pictures), that it has none, or unknown (a live source not yet seen).
    public var captions: ClosedCaptionDeclaration = .unknown
    /// Ad markers may come (`Demuxer.mayCarryAdMarkers`): the HLS outputs get a splice board, and
    /// their MPEG-TS a SCTE-35 PID.
    public var mayCarryAdMarkers = true

    public init(url: String, video: VideoStreamInfo, audio: AudioStreamInfo?, isLive: Bool, duration: Double?,
                videoBitRate: Int? = nil, videoStart: Int64 = 0, audioStart: Int64 = 0, targetDuration: Int? = nil) {
        (self.url, self.video, self.audio) = (url, video, audio)
        (self.isLive, self.duration, self.videoBitRate) = (isLive, duration, videoBitRate)
        (self.videoStart, self.audioStart, self.targetDuration) = (videoStart, audioStart, targetDuration)
    }

    /// The facts of an open input. A live playlist's target duration sets the default loss time
    /// and how far behind a returning input resumes.
    public init(demuxer: Demuxer, configuration: JobConfiguration, videoBitRate: Int?) {
        let needsTarget = demuxer.isLive
        self.init(url: configuration.input, video: demuxer.video, audio: demuxer.audio, isLive: demuxer.isLive,
                  duration: demuxer.duration, videoBitRate: videoBitRate,
                  videoStart: demuxer.start(inTimeBase: demuxer.video.timeBase),
                  audioStart: demuxer.audio.map { demuxer.start(inTimeBase: $0.timeBase) } ?? 0,
                  targetDuration: needsTarget ? demuxer.targetDuration : nil)
        mayCarryAdMarkers = demuxer.mayCarryAdMarkers
        // An HLS input's master says what its variant carries.
        if let declared = demuxer.chosenVariant?.closedCaptions { captions = declared }
        // Only a master declares captions: a ladder from a local file is probed for them.
        if !configuration.renditions.isEmpty, !demuxer.isLive, configuration.captions == .keep,
           FileManager.default.fileExists(atPath: configuration.input) {
            captions = Self.captionServices(inFile: configuration.input, options: configuration.inputOptions)
        }
    }

    /// A file's closed-caption services, read from the SEI of its first three seconds of pictures
    /// (nothing decoded). Pictures with no A/53 data at all: none (an encoder that carries a caption
    /// service writes `cc_data`, padding when silent, in every picture). Data but no words yet, a
    /// codec other than H.264, or a file that will not open again: unknown.
    static func captionServices(inFile path: String, options: InputOptions) -> ClosedCaptionDeclaration {
        guard let demuxer = try? Demuxer(url: path, options: options),
              let decoder = try? Decoder(demuxer: demuxer, streamIndex: demuxer.video.index), decoder.isH264 else { return .unknown }
        var services = CaptionServices()
        var carried = false
        var pictures = 0
        let packet = Packet()
        let limit = Int((3 * (demuxer.video.plausibleFrameRate?.doubleValue ?? 30)).rounded())
        while pictures < limit, case .packet? = try? demuxer.read(into: packet) {
            guard packet.streamIndex == demuxer.video.index else { continue }
            pictures += 1
            let bytes = packet.h264CaptionData(lengthSize: decoder.h264LengthSize)
            carried = carried || !bytes.isEmpty
            services.add(bytes)
        }
        let ids = services.instreamIDs
        return !ids.isEmpty ? .services(ids) : carried ? .unknown : .none
    }
}

/// The picture's way through the pipeline, from decoded frame to encoder.
public enum VideoPath: Sendable, Equatable {
    /// Decoded frames go to the encoder as they are (no chain, same size, 4:2:0).
    case passthrough
    /// The chain run on the decoded 4:2:0 planes (`PlanarChainRenderer`: every filter that has a
    /// `PlanarFilter` form), and a ladder's rungs scaled there: the RGB chain's picture with no
    /// colour conversion.
    case planar
    /// Decoded → RGB → the chain → (scaled per rendition) → YUV.
    case rgbChain
}

/// Sizes, decided before any frame: the orientation fix, the chain as run, and what is encoded.
public struct OutputGeometry: Sendable {
    public var inputSize: FrameSize
    public var orientation: OrientationFix
    /// The chain as run: the orientation fix, the user's chain, then any alignment.
    public var chain: FilterChain
    public var chainOutputSize: FrameSize
    /// What the encoder gets: the chain's size, rounded down to even for 4:2:0 (PNG keeps it).
    public var encodeSize: FrameSize

    /// Set when the chain's size was odd and the encoder gets it rounded down to even.
    public var roundedFrom: FrameSize? { encodeSize == chainOutputSize ? nil : chainOutputSize }

    /// The one geometry rule, shared by `run`, `snapshot`, `estimate`, `probe` and the presets.
    /// - Parameter evenSize: round the encoded size down to even (every 4:2:0 output; not PNG).
    public init(video: VideoStreamInfo, chain: FilterChain, orientation policy: OrientationPolicy,
                alignment: Alignment? = nil, evenSize: Bool = true) throws(FilterError) {
        inputSize = video.size
        orientation = policy == .auto ? OrientationFix(video: video) : .none
        var filters = orientation.filters + chain.filters
        var size = try FilterChain(filters).outputSize(for: video.size)
        if let alignment, let align = alignment.filter(for: size) {
            filters.append(align)
            size = try align.outputSize(for: size)
        }
        self.chain = FilterChain(filters)
        chainOutputSize = size
        // yuv420p needs even sizes: drop the odd last column/row rather than resample.
        encodeSize = evenSize ? size.roundedDownToEven : size
    }
}

extension FrameSize {
    /// At least 2x2, each side rounded down to even.
    var roundedDownToEven: FrameSize { FrameSize(width: max(2, width & ~1), height: max(2, height & ~1)) }
}

/// How output frames are timed.
public enum OutputTiming: Sendable, Equatable {
    /// The display link: constant rate, tick k shows the newest frame at or before k / rate.
    case ticks(TickGrid)
    /// Every decoded frame once, with its own timestamp; `nominalRate` only sizes the encoder.
    case sourceTimestamps(nominalRate: Rational)

    public var rate: Rational {
        switch self {
        case let .ticks(grid): grid.rate
        case let .sourceTimestamps(rate): rate
        }
    }

    public var isConstantRate: Bool { if case .ticks = self { true } else { false } }
}

/// One encoded picture: its size, its encoder settings and, for HLS, its media playlist.
public struct RenditionPlan: Sendable, Equatable {
    public var size: FrameSize
    public var bitRate: Int?
    public var encoder: VideoEncoderSettings
    /// The media playlist (HLS), else nil.
    public var playlistPath: String?
}

/// Audio, decided from the input's track and the settings.
public enum AudioPlan: Sendable, Equatable {
    case none
    /// AAC copied packet for packet.
    case copy(stream: Int)
    /// Decoded, resampled, re-framed and encoded to AAC once; every output gets the same packets.
    case aac(stream: Int, sampleRate: Int, channels: Int, bitRate: Int)
}

/// Where the output goes.
public enum OutputPlan: Sendable, Equatable {
    /// One container file (MP4 and MOV with the index first: faststart).
    case file(path: String, container: OutputContainer)
    /// PNG frames from a `%05d`-style pattern.
    case imageSequence(pattern: String)
    /// HLS: a media playlist per rendition, a master at `masterPath` for a ladder.
    case hls(options: HLSOutputOptions, schedule: SegmentSchedule, masterPath: String?)
    /// `-o null`: every picture is made up to the encoder's input, then dropped; no audio, no file.
    case discard
}

/// Where output keyframes go, decided once for the whole run: the tick stage asks it for every
/// tick, repeated ones too, and the encoder only obeys.
public struct KeyframeRule: Sendable, Equatable {
    /// An output keyframe wherever the picture shown is an input keyframe (`keyframesAtSource`).
    public var atSourceKeyframes: Bool
    /// Every segment's first tick (HLS): the writer cuts there.
    public var schedule: SegmentSchedule?
    /// A shard's first tick (or timestamp): its part must start with a keyframe.
    public var windowStart: Int64?

    public init(atSourceKeyframes: Bool = false, schedule: SegmentSchedule? = nil, windowStart: Int64? = nil) {
        (self.atSourceKeyframes, self.schedule, self.windowStart) = (atSourceKeyframes, schedule, windowStart)
    }

    /// Whether the picture at `pts` (a tick, or a kept timestamp) is encoded as a keyframe.
    public func forces(at pts: Int64, sourceKeyframe: Bool) -> Bool {
        atSourceKeyframes && sourceKeyframe || pts == windowStart || schedule?.startsSegment(tick: pts) == true
    }
}

/// A shard's part of the whole job's output, resolved once from `JobConfiguration.shard`: what is
/// read, fed to the encoder, kept, and how the outputs are numbered.
public struct RunWindow: Sendable, Equatable {
    /// The input keyframe reading starts at (video time base, as the container gives it); nil: the start.
    public var seekKeyframe: Int64?
    /// Ticks (timestamps kept: relative presentation times) whose packets are kept.
    public var kept: Range<Int64>
    /// What the encoder is fed: `kept` plus the warm-up before it and the look-ahead after it.
    public var fed: Range<Int64>
    /// Tick 0's input time (video time base, relative to the container's start): the whole job's grid.
    public var tickOrigin: Int64
    public var firstSegment: Int
    public var firstImageNumber: Int

    init(_ shard: ShardWindow) {
        seekKeyframe = shard.seekKeyframe
        kept = shard.start..<(shard.end ?? .max)
        fed = (shard.encodeFrom ?? shard.start)..<(shard.encodeUntil ?? shard.end ?? .max)
        tickOrigin = shard.tickOrigin
        (firstSegment, firstImageNumber) = (shard.firstSegment, shard.firstImageNumber)
    }
}

/// Every decision of a job, made once from the input's facts and the configuration, before any
/// file is opened. `TranscodeJob` executes a plan; nothing downstream decides again.
public struct JobPlan: Sendable {
    /// The configuration with the preset applied (explicit settings win over the preset's): read
    /// only here, while planning. Everything downstream reads the plan's values and specs.
    private let configuration: JobConfiguration
    public let input: InputFacts
    public let geometry: OutputGeometry
    public let videoPath: VideoPath
    public let timing: OutputTiming
    public let renditions: [RenditionPlan]
    public let audio: AudioPlan
    public let output: OutputPlan
    /// The output's colour tags.
    public let color: ColorDescription
    /// `--orientation keep`: the input's display matrix, copied to the output so players turn it alike.
    public let displayMatrixTag: DisplayMatrix?
    /// A live input skips ahead rather than fall further behind than this.
    public let maxLatency: Duration?
    /// A live input that delivers nothing for this long is lost (nil: not live).
    public let stallTimeout: Duration?
    /// What happens then: the run ends, or the channel holds the last picture or a slate until
    /// the input is back. Anything but `.end` encodes the audio (silence fills the loss).
    public let inputLoss: InputLossPolicy
    /// What a live run sheds when the machine cannot keep up (`--overload adapt`); nil for offline
    /// runs (no deadline) and `--overload off`.
    public let overload: OverloadPlan?
    /// A shard of a split job: the part of the output this run makes (nil: all of it).
    public let window: RunWindow?
    /// Where output keyframes go.
    public let keyframes: KeyframeRule
    /// The user's chain as asked (with the preset's filters; without the orientation fix and the
    /// alignment the geometry adds): what a live chain change edits.
    public let userChain: FilterChain
    /// Labels on every metric the run records.
    public let metricsLabels: [String: String]
    /// The closed captions: kept (paced at the output's rate) or dropped, and what a master says.
    public let captions: CaptionPlan
    /// What the plan noticed and overrode (a VOD playlist asked for LL-HLS parts).
    public let warnings: [String]
    /// The largest frame rate a stream may state and be believed: a stated rate above it is a
    /// container's time base (Matroska's 1000), not pictures; the output then takes 30 fps. One rule
    /// for the plan and the presets (`VideoStreamInfo.plausibleFrameRate`).
    public static let maxPlausibleFrameRate = 240.0

    // What each stage is built from (StageSpecs.swift).
    public let decodeSpec: DecodeSpec
    public let tickSpec: TickSpec
    /// A live input's control; nil for files and VOD.
    public let liveSpec: LiveSpec?
    public let filterSpec: FilterSpec
    /// One per rendition, in order.
    public let encodeSpecs: [EncodeSpec]
    public let outputSpec: OutputSpec
    /// A live input: paced by its delivery on the wall clock, latency-bounded, never sharded.
    public var isLive: Bool { input.isLive }
    /// A live HLS input's segments are decoded whole when they arrive: the demuxer marks each
    /// independent segment's end and the decoder gives up the frames it holds there
    /// (`Demuxer.marksSegmentEnds`), so an output segment or part closes without waiting a
    /// segment's time for the next input segment. Only a playlist has segments (a live input's
    /// target duration is known only for one).
    public var decodesSegmentsWhole: Bool { input.isLive && input.targetDuration != nil }
    /// A live input's decoder gives up a picture it holds for reordering as soon as no earlier
    /// one can still come (H.264: `Decoder.releaseHeldPicture`), so a part's pictures are decoded
    /// when it arrives, not a part later; it decodes with slice threads only (frame threads would
    /// add their own delay of a picture per thread).
    public var releasesHeldPictures: Bool { input.isLive }

    public init(configuration requested: JobConfiguration, input: InputFacts) throws(JobError) {
        var configuration = requested
        guard let container = OutputContainer(path: configuration.output) else {
            throw .media(.unsupportedOutput(configuration.output, reason: "unknown output type"))
        }
        let video = input.video
        if let preset = configuration.preset {
            do {
                try preset.apply(to: &configuration, source: video, sourceBitRate: input.videoBitRate)
            } catch {
                throw .chain(error)
            }
        }
        self.configuration = configuration
        self.input = input
        let policy = configuration.orientation ?? .auto
        do {
            geometry = try OutputGeometry(video: video, chain: configuration.chain, orientation: policy,
                                          alignment: configuration.alignment, evenSize: !container.isImageSequence)
        } catch {
            throw .chain(error)
        }
        displayMatrixTag = policy == .keep ? video.displayMatrix : nil
        maxLatency = input.isLive ? configuration.maxLatency : nil
        // As asked, else 3 × the playlist's target duration + 10 s (4 s when it could not be read).
        // A pushed input (no playlist) delivers frame by frame: 5 s without one is a loss.
        stallTimeout = input.isLive ? configuration.stallTimeout ?? .seconds(input.targetDuration.map { 3 * $0 + 10 } ?? 5) : nil
        if configuration.inputLoss.keepsChannelUp && !input.isLive {
            throw .media(.invalidSettings("--on-input-loss \(configuration.inputLoss) is for live inputs (a live HLS playlist, rtmp://, srt://, udp://, rtsp://); \(configuration.input) is a file or VOD, which cannot be lost"))
        }
        inputLoss = configuration.inputLoss
        if case .slate = inputLoss, container.isImageSequence {
            throw .media(.invalidSettings("--on-input-loss slate= is for video outputs; an image sequence can use --on-input-loss hold"))
        }
        if configuration.shard != nil, input.isLive {
            throw .media(.invalidSettings("a live input cannot be split into shards: live streams scale by running one process per stream"))
        }
        window = configuration.shard.map(RunWindow.init)
        color = ColorDescription.outputTags(forSource: video.colorSpace, size: video.size)

        let rate = configuration.frameRate ?? video.plausibleFrameRate ?? Rational(30, 1)
        let tickClock = configuration.frameRate != nil || configuration.realtime || input.isLive || container == .hls
        timing = tickClock ? .ticks(TickGrid(rate: rate)) : .sourceTimestamps(nominalRate: rate)

        // Outputs and renditions.
        var renditions: [RenditionPlan] = []
        var schedule: SegmentSchedule?
        switch container {
        case .hls:
            var options = configuration.hls
            // Live in, live out; a file served while it runs is EVENT, so players see it grow.
            if configuration.hlsPlaylistType == nil {
                options.playlistType = input.isLive ? .live : configuration.servedWhileRunning ? .event : .vod
            }
            do { try options.validate() } catch { throw .media(error) }
            let segments = SegmentSchedule(grid: TickGrid(rate: rate), seconds: options.segmentDuration)
            schedule = segments
            let ladder = !configuration.renditions.isEmpty
            let path = configuration.output as NSString
            let folder = path.deletingLastPathComponent
            let stem = (path.lastPathComponent as NSString).deletingPathExtension
            let rungs = ladder ? configuration.renditions : [Rendition(size: geometry.encodeSize, bitRate: nil)]
            for rung in rungs {
                // A rung fits its box with the chain's aspect, on even sizes.
                let size = ladder ? aspectFit(geometry.chainOutputSize, in: rung.size).roundedDownToEven : rung.size
                var settings = configuration.video
                if let bitRate = rung.bitRate {
                    settings.rateControl = .averageBitrate(bitRate)
                    settings.maxRate = settings.maxRate ?? bitRate * 6 / 5
                    settings.bufferSize = settings.bufferSize ?? bitRate * 2
                }
                // Segment starts are forced keyframes (from the schedule); no scene-cut keyframes
                // between, and no interval keyframe inside the longest segment the schedule cuts.
                settings.fixedKeyframeCadence = true
                settings.keyframeInterval = .frames(Int(segments.longestSegmentTicks))
                // A live output's segment (or LL-HLS part) is published when its last picture is
                // encoded: no encoder delay, or the last pictures of each input segment would wait
                // for the next one to push them out of x264's look-ahead.
                if options.playlistType != .vod, options.partDuration != nil || input.isLive { settings.lowDelay = true }
                let playlist = ladder ? (folder.isEmpty ? "" : folder + "/") + "\(stem)_\(size.width)x\(size.height).m3u8"
                                      : configuration.output
                renditions.append(RenditionPlan(size: size, bitRate: rung.bitRate, encoder: settings, playlistPath: playlist))
            }
            output = .hls(options: options, schedule: segments, masterPath: ladder ? configuration.output : nil)
        case .pngSequence:
            renditions = [RenditionPlan(size: geometry.encodeSize, bitRate: nil, encoder: configuration.video, playlistPath: nil)]
            output = .imageSequence(pattern: configuration.output)
        case .null:
            renditions = [RenditionPlan(size: geometry.encodeSize, bitRate: nil, encoder: configuration.video, playlistPath: nil)]
            output = .discard
        default:
            renditions = [RenditionPlan(size: geometry.encodeSize, bitRate: nil, encoder: configuration.video, playlistPath: nil)]
            output = .file(path: configuration.output, container: container)
        }
        self.renditions = renditions
        videoPath = Self.videoPath(video: video, color: color, geometry: geometry, renditions: renditions,
                                   imageSequence: container.isImageSequence, exactRGB: configuration.exactRGB,
                                   controlled: configuration.chainControl)
        audio = container.isImageSequence || container == .null ? .none
            : Self.audioPlan(input.audio, settings: configuration.audio, fillsSilence: configuration.inputLoss.keepsChannelUp)
        keyframes = KeyframeRule(atSourceKeyframes: configuration.keyframesAtSource,
                                 schedule: schedule, windowStart: window?.kept.lowerBound)
        if input.isLive, configuration.overload == .adapt, case let .ticks(grid) = timing {
            // The encoder is reopened at keyframes only where nothing waits in it (the low-delay
            // tune) and it is x264.
            let h264 = !container.isImageSequence && container != .null
            overload = OverloadPlan(inputRate: video.frameRate.map(\.doubleValue), tickRate: grid.rate.doubleValue,
                                    preset: renditions.first?.encoder.speedPreset ?? configuration.video.speedPreset,
                                    presetSwaps: h264 && renditions.allSatisfy(\.encoder.lowDelay),
                                    segmentSeconds: input.targetDuration.map(Double.init), maxLatency: maxLatency)
        } else {
            overload = nil
        }
        userChain = configuration.chain
        metricsLabels = configuration.metricsLabels
        // Dropped captions are declared absent; kept ones as the input told (unknown: not declared,
        // since a player takes absence as "may have").
        captions = CaptionPlan(keeps: configuration.captions == .keep, outputRate: timing.rate.doubleValue,
                               declaration: configuration.captions == .drop ? .none : input.captions)

        // The stages' specs.
        let faults = configuration.faults
        let timeBase = timing.isConstantRate ? timing.rate.inverse : video.timeBase
        decodeSpec = DecodeSpec(origin: input.videoStart, audioStream: audio == .none ? nil : input.audio?.index,
                                nominalRate: timing.rate, readCapacity: input.isLive ? 8192 : 64,
                                seekKeyframe: window?.seekKeyframe, marksSegmentEnds: input.isLive && input.targetDuration != nil,
                                releasesHeldPictures: input.isLive, recordsDecodeTimes: input.isLive,
                                reconnects: inputLoss.keepsChannelUp)
        var overloadSpec = overload
        overloadSpec?.pinnedLevel = faults.pinnedOverloadLevel
        liveSpec = input.isLive ? Self.liveSpec(input: input, configuration: configuration, lossTime: stallTimeout ?? .seconds(5),
                                                overload: overloadSpec) : nil
        let inputTimeBase = video.timeBase
        // Closures below read these copies (self is not whole yet).
        let (plannedTiming, plannedColor, plannedWindow, matrixTag) = (timing, color, window, displayMatrixTag)
        let tickWindow: TickWindow? = window.flatMap { window in
            guard plannedTiming.isConstantRate else { return nil }
            return TickWindow(origin: MediaTime(value: window.tickOrigin, numerator: Int64(inputTimeBase.numerator),
                                                denominator: Int64(inputTimeBase.denominator)),
                              firstTick: window.fed.lowerBound, endTick: window.fed.upperBound == .max ? nil : window.fed.upperBound)
        }
        tickSpec = TickSpec(timing: timing, realtime: configuration.realtime, keyframes: keyframes, fed: window?.fed,
                            tickWindow: tickWindow, seeks: window?.seekKeyframe != nil, maxDuration: configuration.maxDuration,
                            live: liveSpec, input: configuration.input, captions: captions)
        let rule = VideoPathRule(video: video, color: color, renditions: renditions, imageSequence: container.isImageSequence,
                                 exactRGB: configuration.exactRGB, controlled: configuration.chainControl)
        var slate: String?
        if case let .slate(file) = inputLoss { slate = file }
        filterSpec = FilterSpec(path: videoPath, geometry: geometry, input: video, color: color, renditionSizes: renditions.map(\.size),
                                rgbEncoder: container.isImageSequence, slate: slate, timeBase: timeBase,
                                constantRate: timing.isConstantRate, replan: rule, slowPictureMilliseconds: faults.slowPictureMilliseconds)
        let presets = overload?.steps.compactMap { step -> EncoderSpeedPreset? in
            if case let .encoderPreset(preset) = step { preset } else { nil }
        } ?? []
        encodeSpecs = renditions.map { rendition in
            // A preset step reopens x264 at a keyframe with the stream's own parameter sets.
            var steps: [EncoderSpeedPreset: VideoEncoderSettings] = [:]
            // A step back to the asked preset reopens it the same way.
            if !container.isImageSequence, !presets.isEmpty {
                for preset in presets + [rendition.encoder.speedPreset] {
                    var faster = rendition.encoder
                    faster.speedPreset = preset
                    faster.parameterSetsOf = rendition.encoder.speedPreset
                    steps[preset] = faster
                }
            }
            return EncodeSpec(size: rendition.size, codec: container.isImageSequence ? .png : .h264(rendition.encoder),
                              frameRate: plannedTiming.rate, timeBase: timeBase, color: plannedColor,
                              constantRate: plannedTiming.isConstantRate, keep: plannedWindow?.kept, displayMatrix: matrixTag, presetSteps: steps,
                              failsAfter: faults.encoderFailsAfter)
        }
        var warnings: [String] = []
        outputSpec = Self.outputSpec(output: output, renditions: renditions, hasAudio: audio != .none, window: window,
                                     captions: captions.declaration, configuration: configuration, warnings: &warnings)
        self.warnings = warnings
    }

    /// A live input's control, from its facts and the configuration.
    private static func liveSpec(input: InputFacts, configuration: JobConfiguration, lossTime: Duration,
                                 overload: OverloadPlan?) -> LiveSpec {
        // Segments behind the newest a live HLS input is joined (and a restarted origin followed):
        // the ticks' slack against a segment that comes late. A pushed input (no playlist) gets 0.5 s.
        let joinSegments = configuration.inputOptions.liveStart.segmentsBehindNewest
        let resume = input.targetDuration.map { Double(joinSegments * $0) } ?? 0.5
        let start = input.targetDuration.map { joinSegments == 1 ? Double($0) : 0 } ?? 0.5
        return LiveSpec(lossTime: lossTime, inputLoss: configuration.inputLoss,
                        resumeDelay: .milliseconds(Int64(1000 * resume)), startDelay: .milliseconds(Int64(1000 * start)),
                        maxLatency: configuration.maxLatency,
                        // Catching up after the join ends within the latency bound.
                        catchUpBound: configuration.maxLatency, overload: overload)
    }

    /// Every path the run writes, and how.
    private static func outputSpec(output: OutputPlan, renditions: [RenditionPlan], hasAudio: Bool, window: RunWindow?,
                                   captions: ClosedCaptionDeclaration, configuration: JobConfiguration,
                                   warnings: inout [String]) -> OutputSpec {
        let kind: OutputSpec.Kind
        switch output {
        case let .file(path, container):
            // MP4 and MOV with the index first, so players start before the whole file is read.
            kind = .file(path: path, container: container, faststart: container == .mp4 || container == .mov)
        case let .imageSequence(pattern):
            kind = .imageSequence(pattern: pattern, firstNumber: window?.firstImageNumber ?? 1)
        case let .hls(options, schedule, masterPath):
            // Parts are for playlists published while they grow; a VOD playlist appears whole at the end.
            var partTicks: Int64?
            if let part = options.partDuration {
                if options.playlistType != .vod {
                    partTicks = max(1, Int64((part * schedule.grid.rate.doubleValue + 1e-6).rounded(.down)))
                } else {
                    warnings.append("HLS parts apply to live and event playlists; this VOD playlist is written without them")
                }
            }
            // A ladder's audio is one rendition every rung plays with (a 5.1 track copied into each
            // rung made a 400k rung 853 kb/s), beside the master.
            let audioPlaylist = masterPath.flatMap { master -> String? in
                guard hasAudio else { return nil }
                let url = URL(fileURLWithPath: master)
                let name = url.deletingPathExtension().lastPathComponent + "_audio.m3u8"
                return url.deletingLastPathComponent().appendingPathComponent(name).path
            }
            kind = .hls(OutputSpec.HLS(options: options, schedule: schedule, partTicks: partTicks,
                                       playlists: renditions.map { $0.playlistPath ?? configuration.output },
                                       masterPath: masterPath, closedCaptions: captions, audioPlaylist: audioPlaylist,
                                       firstSegment: window?.firstSegment ?? 0))
        case .discard:
            kind = .discard
        }
        return OutputSpec(kind: kind, path: configuration.output, createsFolder: output != .discard && configuration.createsOutputFolder,
                          overwrite: configuration.overwrite, audioOnlyFaststart: false, onFilePublished: configuration.onFilePublished)
    }

    /// The path for `geometry` (a live chain change), by the same rule as the plan's.
    func videoPath(for geometry: OutputGeometry) -> VideoPath { filterSpec.replan.path(for: geometry) }

    /// The geometry this job would have with `chain` as the user's chain (orientation, alignment
    /// and evenness as planned).
    func geometry(with chain: FilterChain) throws(FilterError) -> OutputGeometry {
        try OutputGeometry(video: input.video, chain: chain, orientation: configuration.orientation ?? .auto,
                           alignment: configuration.alignment, evenSize: !container.isImageSequence)
    }

    /// The cheapest path that gives the chain's picture: no conversion at all when nothing changes
    /// the picture, the chain on the decoded planes when every filter in it allows, else the RGB chain.
    static func videoPath(video: VideoStreamInfo, color: ColorDescription, geometry: OutputGeometry, renditions: [RenditionPlan],
                          imageSequence: Bool, exactRGB: Bool = false, controlled: Bool = false) -> VideoPath {
        // PNG frames are RGB; anything but 8-bit 4:2:0 goes through the converter.
        guard !imageSequence, video.decodesTo420 else { return .rgbChain }
        let ladder = !renditions.allSatisfy { $0.size == geometry.encodeSize }
        // A chain that may change live is never passed through: an empty chain is a copy on the
        // planes. Full-range pictures are written as limited range on the planes (the encoder's).
        if geometry.chain.isEmpty, geometry.encodeSize == video.size, !controlled, !ladder,
           video.decodesToLimitedRange420 { return .passthrough }
        // A ladder's rungs are scaled from the chain's picture on the planes too (even sizes, as
        // every rung's is, and not so small that the plane scaler's weights lose their shape).
        if !exactRGB, geometry.chainOutputSize == geometry.encodeSize,
           renditions.allSatisfy({ $0.size.width % 2 == 0 && $0.size.height % 2 == 0 }),
           PlanarPath.isFeasible(chain: geometry.chain, input: video, color: color, chainOutputSize: geometry.chainOutputSize,
                                 renditionSizes: renditions.map(\.size)) {
            return .planar
        }
        return .rgbChain
    }

    /// Copy AAC when nothing was asked; otherwise AAC at the settings, unset fields following the source.
    /// - Parameter fillsSilence: an input loss is filled with silence, which only an encoder makes.
    static func audioPlan(_ audio: AudioStreamInfo?, settings: AudioSettings, fillsSilence: Bool = false) -> AudioPlan {
        guard let audio, settings != .none else { return .none }
        if settings == .automatic, audio.isAAC, !fillsSilence { return .copy(stream: audio.index) }
        var aac = AACSettings()
        if case let .aac(s) = settings { aac = s }
        let channels = aac.channels ?? min(audio.channels, 2)
        return .aac(stream: audio.index, sampleRate: aac.sampleRate ?? aacSampleRate(near: audio.sampleRate),
                    channels: channels, bitRate: aac.bitRate ?? AACSettings.defaultBitRatePerChannel * channels)
    }

    /// AAC's sampling rates; anything else is resampled to the nearest one.
    static func aacSampleRate(near rate: Int) -> Int {
        let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000]
        return rates.min(by: { abs($0 - rate) < abs($1 - rate) }) ?? 48000
    }

    // MARK: Derived facts

    public var container: OutputContainer {
        switch output {
        case let .file(_, container): container
        case .imageSequence: .pngSequence
        case .hls: .hls
        case .discard: .null
        }
    }

    /// The segment schedule of an HLS output.
    public var segmentSchedule: SegmentSchedule? {
        if case let .hls(_, schedule, _) = output { return schedule }
        return nil
    }

    /// The audio's bit rate: the encoder's, or the copied track's as its container states it
    /// (nil when unknown; a master playlist's peak then counts the measured segments alone).
    public var audioBitRate: Int? {
        switch audio {
        case .none: nil
        case .copy: input.audio?.bitRate
        case let .aac(_, _, _, bitRate): bitRate
        }
    }

    /// Channels of the audio written (an HLS audio rendition's CHANNELS), nil without audio.
    public var audioChannels: Int? {
        switch audio {
        case .none: nil
        case .copy: input.audio?.channels
        case let .aac(_, _, channels, _): channels
        }
    }

    public var hlsOptions: HLSOutputOptions? {
        if case let .hls(options, _, _) = output { return options }
        return nil
    }

    /// The output as asked (`-o`).
    public var outputPath: String { outputSpec.path }
    /// An HLS ladder: a master playlist over the renditions' media playlists.
    public var isLadder: Bool { if case let .hls(_, _, master) = output { master != nil } else { false } }
    /// The LL-HLS part length in ticks, nil without parts (and for VOD, which has none).
    public var partTicks: Int64? { if case let .hls(hls) = outputSpec.kind { hls.partTicks } else { nil } }
    /// A ladder's audio rendition's media playlist, when it has one.
    public var audioPlaylistPath: String? { if case let .hls(hls) = outputSpec.kind { hls.audioPlaylist } else { nil } }

    /// The video bit rate asked for (each rendition's, summed), nil when any is quality-based (CRF).
    public var videoBitRate: Int? {
        var sum = 0
        for rendition in renditions {
            guard case let .averageBitrate(rate)? = rendition.encoder.rateControl else { return nil }
            sum += rate
        }
        return sum
    }

    /// The audio's bit rate for a size estimate: the plan's, and a copied track whose container
    /// does not state one counted at 128 kb/s.
    public var estimatedAudioBitRate: Int {
        if case .copy = audio { return audioBitRate ?? 128_000 }
        return audioBitRate ?? 0
    }
}

extension VideoStreamInfo {
    /// The stream's stated frame rate when it is one a picture stream can have (positive, at most
    /// `JobPlan.maxPlausibleFrameRate`), else nil.
    public var plausibleFrameRate: Rational? {
        frameRate.flatMap { $0.isPositive && $0.doubleValue <= JobPlan.maxPlausibleFrameRate ? $0 : nil }
    }
}

extension VideoStreamInfo {
    /// Decoded frames are 8-bit 4:2:0 in three planes, in either range (yuvj420p is full).
    var decodesTo420: Bool { pixelFormat == .yuv420p || pixelFormat == .yuvj420p }
    /// The range of the decoded samples.
    var decodedRange: ColorRange { pixelFormat.isFullRangeByDefault ? .full : colorSpace.range }
    /// Decoded frames are limited-range 4:2:0, what the encoder takes without conversion.
    var decodesToLimitedRange420: Bool { decodesTo420 && decodedRange == .limited }
}
