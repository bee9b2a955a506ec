import ArgumentParser
import Filters
import Foundation
import MediaIO
import Pipeline

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Decode INPUT, run the filter chain on every frame, encode to OUTPUT.",
        discussion: """
            Chain grammar: filter ('|' filter)*, filter := name arg*, arg := value | key=value.
            Example: --chain "blur sigma=6 | rotate 90 | mirror | scale fit=1280x720"
            The output type follows its extension: .mp4 (faststart), .mov, .mkv, .ts, or a PNG \
            pattern such as frames/%05d.png.
            """)

    @Argument(help: "Input file or URL.")
    var input: String

    @Option(name: [.short, .long], help: "Output path.")
    var output: String

    @Option(help: "Filter chain, e.g. \"blur 6 | mirror\".")
    var chain: String?

    @Option(help: "Read the chain from a file (one filter per line, # comments).")
    var chainFile: String?

    @Option(help: "auto: apply the input's rotation tag to the pixels; keep: leave pixels and tag.")
    var orientation: OrientationPolicy = .auto

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

    @Option(help: "Where a live playlist starts: edge or oldest.")
    var liveStart: LiveStart = .edge

    @Flag(help: "Pace a file or VOD input in real time, like live.")
    var realtime = false

    @Option(help: "Seconds a live output may lag the live edge before frames are dropped.")
    var maxLatency: Double = 10

    @Option(help: "Seconds a live input may deliver nothing before the run ends (default 3 × target duration + 10).")
    var stallTimeout: Double?

    @Flag(name: [.short, .long], help: "No progress bar and no summary.")
    var quiet = false

    @Option(help: "Progress display: auto (a bar on a terminal), bar, json (one object per line), none.")
    var progress: ProgressStyle = .auto

    @Option(help: "Write --progress json lines to this file instead of stderr.")
    var progressFile: String?

    @Option(help: "Write the final run report as JSON to this file.")
    var report: String?

    @Flag(help: "Print milliseconds per frame for each pipeline stage.")
    var stats = false

    @Flag(help: "Show FFmpeg's own warnings.")
    var verbose = false

    @Flag(name: [.customShort("y"), .long], help: "Replace an existing output.")
    var overwrite = false

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
        if let stallTimeout, !(stallTimeout > 0 && stallTimeout <= 86400) { throw ValidationError("--stall-timeout must be positive") }
        if progressFile != nil && progress != .json { throw ValidationError("--progress-file needs --progress json") }
    }

    func run() async throws {
        let filterChain = try parseChain()
        var config = JobConfiguration(input: input, output: output, chain: filterChain)
        config.orientation = orientation
        config.overwrite = overwrite
        config.frameRate = fps
        config.video = videoSettings
        config.audio = audioSettings
        config.realtime = realtime
        config.maxLatency = .milliseconds(Int64(maxLatency * 1000))
        config.stallTimeout = stallTimeout.map { .milliseconds(Int64($0 * 1000)) }
        config.inputOptions.variant = variant
        config.inputOptions.liveStart = liveStart

        FFmpegLog.setLevel(verbose ? .warning : .quiet)
        let job: TranscodeJob
        do {
            job = try TranscodeJob(configuration: config)
        } catch {
            throw CommandFailure(error)
        }
        let signals = StopSignals()
        let bar = ProgressBar(enabled: !quiet && (progress == .bar || (progress == .auto && Terminal.isInteractive)))
        let json = progress == .json ? try JSONProgressWriter(path: progressFile) : nil
        let summary: JobSummary
        do {
            summary = try await job.run(progress: { bar.update($0); json?.write($0) }, shouldStop: { signals.signal != nil })
        } catch {
            bar.clear()
            throw CommandFailure(error)
        }
        bar.clear()
        if let report { try RunReport(summary: summary, job: job).write(to: report) }
        if !quiet { SummaryPrinter.print(summary, job: job) }
        if stats { SummaryPrinter.printStages(summary) }
        if let sig = signals.signal {
            if !quiet { Terminal.line("livefilter: stopped by signal \(sig); the output holds what was done") }
            throw ExitCode(sig == SIGTERM ? LiveFilterExit.terminated.rawValue : LiveFilterExit.interrupted.rawValue)
        }
    }

    /// Parses the chain before any file is opened, so a typo costs nothing.
    private func parseChain() throws -> FilterChain {
        try ChainArguments(chain: chain, chainFile: chainFile).parse()
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
