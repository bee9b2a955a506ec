import HLS
import ArgumentParser
import Filters
import Foundation
import MediaIO
import Pipeline

/// The options that describe a job, shared by `run` and `estimate`.
struct JobOptions: ParsableArguments {
    @Option(help: "Export preset (see livefilter presets); explicit options override it.")
    var preset: ExportPreset?

    @Option(help: "Filter chain, e.g. \"blur 6 | mirror\".")
    var chain: String?

    @Option(help: "Read the chain from a file (one filter per line, # comments).")
    var chainFile: String?

    @Option(help: "auto: apply the input's rotation tag to the pixels; keep: leave pixels and tag; ignore: neither.")
    var orientation: OrientationPolicy?

    @Flag(help: "Run the chain on RGB pictures even where it gives the same picture on the decoded YUV planes (slower; for comparing).")
    var exactRGB = false

    @Option(help: "Round the output's width and height to a multiple of 2, 8 or 16.")
    var align: Int?

    @Option(help: "How --align gets there: scale, crop or pad.")
    var alignMode: Alignment.Mode = .crop

    @Option(help: "Constant rate factor 0–51 (default 23).")
    var crf: Double?

    @Option(help: "Average video bitrate, e.g. 2M.")
    var videoBitrate: BitRate?

    @Option(help: "Peak video bitrate (VBV).")
    var maxrate: BitRate?

    @Option(help: "VBV buffer size in bits (default twice --maxrate).")
    var bufsize: BitRate?

    @Option(help: "Frames between keyframes, or seconds with 's' (e.g. 2s).")
    var keyframeInterval: KeyframeInterval?

    @Flag(help: "A keyframe in the output wherever the input has one (like ffmpeg's -force_key_frames source); sharded file jobs always do this.")
    var keyframesAtSource = false

    @Option(help: "H.264 profile.")
    var profile: H264Profile?

    @Option(help: "H.264 level, e.g. 3.1 or 4.0.")
    var level: String?

    @Option(help: "x264 speed preset.")
    var encoderPreset: EncoderSpeedPreset = .medium

    @Option(help: "AAC bitrate, e.g. 128k (re-encodes audio).")
    var audioBitrate: BitRate?

    @Option(help: "Audio sample rate in Hz (re-encodes audio).")
    var audioRate: Int?

    @Option(help: "Audio channels (re-encodes audio).")
    var audioChannels: Int?

    @Flag(help: "Drop audio.")
    var noAudio = false

    @Option(help: "Constant output frame rate, e.g. 30 or 30000/1001 (display-link ticks).")
    var fps: Rational?

    @Option(help: "Variant of a master playlist: highest, lowest, N (from 0) or max-bandwidth=B.")
    var variant: VariantChoice = .highest

    @Option(help: "Where a live playlist starts: edge (its newest segment), holdback (three back, as players start) or oldest.")
    var liveStart: LiveStart = .edge

    @Flag(help: "Pace a file or VOD input in real time, like live.")
    var realtime = false

    @Option(help: "Seconds a live output may lag the live edge before frames are dropped.")
    var maxLatency: Double = 10

    @Option(help: "HLS output: segment length in seconds.")
    var hlsTime: Double = 4

    @Option(help: "HLS output: vod, event or live (sliding window). Default: live for a live input, else vod.")
    var hlsPlaylist: HLSPlaylistKind?

    @Option(help: "HLS output: segments listed in a live playlist.")
    var hlsListSize: Int = 6

    @Option(help: "HLS output: ts or fmp4 segments.")
    var hlsSegmentType: HLSSegmentType = .ts

    @Option(help: ArgumentHelp("Low-Latency HLS output: publish each segment also as parts of at most this many seconds (0.1 … half of --hls-time; e.g. 0.5), with blocking reload and preload hints for players; live and event playlists.",
                               discussion: "Serve it with --serve or `livefilter serve`, which answer blocking playlist reloads and hold the hinted part. The encoder then runs without B-frames or look-ahead so a part is out as soon as its last picture is encoded."))
    var hlsPart: Double?

    @Option(help: "HLS ladder rung WxH@RATE, e.g. 1280x720@2800k (repeat for more; a master playlist is written at -o).")
    var rendition: [Rendition] = []

    @Option(help: "Seconds a network read may make no progress before it fails (opening, and each packet of a network VOD, get 3 times this).")
    var ioTimeout: Double = 10

    @Flag(inversion: .prefixedNo, help: ArgumentHelp(
        "Whether a remote HLS playlist may send requests to loopback, link-local (169.254.0.0/16: cloud metadata) and private addresses, its redirects included.",
        discussion: "By default: no when the input is on a public address, yes when it is itself on a loopback or private one."))
    var allowPrivateNetworks: Bool?

    @Option(help: "Refuse inputs whose pictures have more pixels than this.")
    var maxPixels: Int = 8192 * 4320

    @Option(help: "Stop after this many seconds of input.")
    var maxDuration: Double?

    @Option(help: ArgumentHelp("Seconds a live input may deliver nothing before it is lost (default 3 × target duration + 10 for HLS, 5 for a pushed input).",
                               discussion: "--stall-timeout is the former name of this option."))
    var inputLossAfter: Double?

    @Option(help: .hidden)
    var stallTimeout: Double?

    @Flag(help: "An rtmp:// input is a server publishers push to (as ffmpeg's -listen 1): rtmp://0.0.0.0:1935/APP/KEY.")
    var listen = false

    @Flag(help: "A listener off loopback (RTMP, SRT, UDP) takes publishers without a stream key or passphrase.")
    var listenUnauthenticated = false

    @Option(help: ArgumentHelp("What a lost live input does to the output: end (the run ends, exit 9), hold (keep the last picture, audio silent, until the input is back) or slate=FILE.png.",
                               valueName: "end|hold|slate=FILE"))
    var onInputLoss: InputLossPolicy = .end

    @Option(help: ArgumentHelp("A live run the machine cannot keep up with: adapt (shed the cheapest quality first, in steps: a faster x264 preset from the next segment, less decoding, then evenly fewer new pictures; taken back when the load goes) or off (every picture as asked; late ticks repeat).",
                               valueName: "adapt|off"))
    var overload: OverloadPolicy = .adapt

    @Option(help: ArgumentHelp("The closed captions in the source's pictures (ATSC A/53: CEA-608/708): keep (re-paced onto the output's pictures, written back by the encoder; a ladder's master declares them) or drop (none leave: for redaction jobs that must remove what was said).",
                               valueName: "keep|drop"))
    var captions: CaptionPolicy = .keep

    @Option(name: .customLong("ad-markers"),
            help: ArgumentHelp("The source's ad markers (SCTE-35 in MPEG-TS, EXT-X-DATERANGE, EXT-X-CUE-OUT/IN) in HLS output: daterange (EXT-X-DATERANGE with the SCTE-35 section, rfc8216bis), cue (EXT-X-CUE-OUT/-CONT/-IN, for older players and ad servers), both, or none (no tags). Whatever the tags, each splice starts a segment on an IDR picture: the output picture that shows the splice's source picture.",
                               valueName: "daterange|cue|both|none"))
    var adMarkers: AdMarkerStyle = .daterange

    func validate() throws {
        if chain != nil && chainFile != nil { throw ValidationError("--chain and --chain-file cannot be used together") }
        if crf != nil && videoBitrate != nil { throw ValidationError("--crf and --video-bitrate cannot be used together: choose quality or bitrate") }
        if let crf, !(0...51).contains(crf) { throw ValidationError("--crf must be between 0 and 51, got \(crf)") }
        if let level, H264Level.idc(level) == nil {
            throw ValidationError("--level '\(level)' is not an H.264 level; use one of \(H264Level.all.joined(separator: ", "))")
        }
        if noAudio && (audioBitrate != nil || audioRate != nil || audioChannels != nil) {
            throw ValidationError("--no-audio cannot be combined with --audio-bitrate, --audio-rate or --audio-channels")
        }
        if let audioRate, !(8000...96000).contains(audioRate) { throw ValidationError("--audio-rate must be between 8000 and 96000 Hz") }
        if let audioChannels, !(1...8).contains(audioChannels) { throw ValidationError("--audio-channels must be between 1 and 8") }
        if bufsize != nil && maxrate == nil { throw ValidationError("--bufsize needs --maxrate") }
        if !(maxLatency > 0 && maxLatency <= 3600) { throw ValidationError("--max-latency must be between 0 and 3600 seconds") }
        if inputLossAfter != nil && stallTimeout != nil { throw ValidationError("--input-loss-after and --stall-timeout are one option (the second is its former name): give one") }
        if let after = inputLossAfter ?? stallTimeout, !(after > 0 && after <= 86400) {
            throw ValidationError("\(inputLossAfter != nil ? "--input-loss-after" : "--stall-timeout") must be between 0 and 86400 seconds")
        }
        if !(ioTimeout >= 1 && ioTimeout <= 600) { throw ValidationError("--io-timeout must be between 1 and 600 seconds") }
        if maxPixels < 64 * 64 { throw ValidationError("--max-pixels must be at least 4096") }
        if let maxDuration, !(maxDuration > 0 && maxDuration.isFinite) { throw ValidationError("--max-duration must be positive") }
        if !(hlsTime >= 0.5 && hlsTime <= 60) { throw ValidationError("--hls-time must be between 0.5 and 60 seconds") }
        if !(1...1000).contains(hlsListSize) { throw ValidationError("--hls-list-size must be between 1 and 1000") }
        if let hlsPart, !(hlsPart >= 0.1 && hlsPart <= hlsTime / 2) {
            throw ValidationError("--hls-part must be between 0.1 s and half of --hls-time (\(hlsTime / 2) s)")
        }
        if let align, ![2, 8, 16].contains(align) { throw ValidationError("--align must be 2, 8 or 16") }
    }

    /// The job these options describe. The chain is parsed first, before any file is opened.
    func configuration(input: String, output: String) throws -> JobConfiguration {
        let filterChain = try ChainArguments(chain: chain, chainFile: chainFile).parse()
        var config = JobConfiguration(input: input, output: output, chain: filterChain)
        config.createsOutputFolder = true
        config.preset = preset
        config.orientation = orientation
        config.alignment = align.map { Alignment(multiple: $0, mode: alignMode) }
        config.frameRate = fps
        config.video = videoSettings
        config.audio = audioSettings
        config.realtime = realtime
        config.exactRGB = exactRGB
        config.keyframesAtSource = keyframesAtSource
        config.maxLatency = .milliseconds(Int64(maxLatency * 1000))
        config.stallTimeout = (inputLossAfter ?? stallTimeout).map { .milliseconds(Int64($0 * 1000)) }
        config.inputLoss = onInputLoss
        config.overload = overload
        config.captions = captions
        config.inputOptions.variant = variant
        config.inputOptions.liveStart = liveStart
        config.inputOptions.maxPixels = maxPixels
        config.inputOptions.listen = listen
        config.inputOptions.listenUnauthenticated = listenUnauthenticated
        config.inputOptions.ioTimeout = .milliseconds(Int64(ioTimeout * 1000))
        config.inputOptions.allowPrivateNetworks = allowPrivateNetworks
        config.maxDuration = maxDuration
        config.hls.segmentDuration = hlsTime
        config.hls.listSize = hlsListSize
        config.hls.segmentType = hlsSegmentType
        config.hls.partDuration = hlsPart
        config.hls.adMarkers = adMarkers
        config.hlsPlaylistType = hlsPlaylist
        config.renditions = rendition
        return config
    }

    private var videoSettings: VideoEncoderSettings {
        var v = VideoEncoderSettings()
        if let videoBitrate { v.rateControl = .averageBitrate(videoBitrate.bitsPerSecond) }
        if let crf { v.rateControl = .crf(crf) }
        if let maxrate {
            v.maxRate = maxrate.bitsPerSecond
            v.bufferSize = bufsize?.bitsPerSecond ?? 2 * maxrate.bitsPerSecond
        }
        v.keyframeInterval = keyframeInterval
        v.profile = profile
        v.level = level
        v.speedPreset = encoderPreset
        return v
    }

    private var audioSettings: AudioSettings {
        if noAudio { return .none }
        if audioBitrate == nil && audioRate == nil && audioChannels == nil { return .automatic }
        return .aac(AACSettings(bitRate: audioBitrate?.bitsPerSecond, sampleRate: audioRate, channels: audioChannels))
    }
}

extension CaptionPolicy: ExpressibleByArgument {}
extension AdMarkerStyle: ExpressibleByArgument {}
