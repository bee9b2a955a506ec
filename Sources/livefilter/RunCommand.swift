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

    @Option(name: [.short, .long], help: "Output path: .mp4 .mov .mkv .ts, .m3u8 (HLS), frames/%05d.png, or null (filter and drop every picture, like ffmpeg's -f null).")
    var output: String

    @OptionGroup var job: JobOptions

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

    @Option(help: "HLS output: serve its folder over HTTP at HOST:PORT during the run, with a player page at /.")
    var serve: ListenAddress?

    @Flag(help: "With --serve: keep serving after the run until Ctrl-C.")
    var serveAfter = false

    func validate() throws {
        if progressFile != nil && progress != .json { throw ValidationError("--progress-file needs --progress json") }
        try Serving.validate(serve: serve, after: serveAfter, output: output)
    }

    func run() async throws {
        var config = try self.job.configuration(input: input, output: output)
        config.overwrite = overwrite

        FFmpegLog.setLevel(verbose ? .warning : .quiet)
        FFmpegLog.captureNetworkWarnings(verbose: verbose)
        let job: TranscodeJob
        do {
            job = try Serving.job(config, serving: serve != nil)
        } catch {
            throw CommandFailure(error, context: NetworkWarnings.drain().last)
        }
        for w in NetworkWarnings.drain() { Terminal.warning(w) }
        // The report is an output too: checked and begun before the run, published after it (a
        // report of the same name is replaced), discarded when the run fails.
        let reportFile: AtomicFile?
        do throws(MediaError) {
            reportFile = try report.map { path throws(MediaError) in try AtomicFile(path: path, overwrite: true) }
            try reportFile?.begin()
        } catch {
            throw CommandFailure(error)
        }
        var reported = false
        defer { if !reported { reportFile?.discard() } }
        let signals = StopSignals()
        let server = try serve.map { try Serving.start(output: output, at: $0) }
        defer { server?.stop() }
        let bar = ProgressBar(enabled: !quiet && (progress == .bar || (progress == .auto && Terminal.isInteractive)))
        let json = progress == .json ? try JSONProgressWriter(path: progressFile) : nil
        let summary: JobSummary
        do {
            summary = try await job.run(progress: { p in
                let warnings = NetworkWarnings.drain()
                if !warnings.isEmpty { bar.clear() }
                for w in warnings { Terminal.warning(w) }
                bar.update(p)
                json?.write(p)
            }, shouldStop: { signals.signal != nil })
        } catch {
            bar.clear()
            throw CommandFailure(error, context: NetworkWarnings.drain().last)
        }
        bar.clear()
        for w in NetworkWarnings.drain() { Terminal.warning(w) }
        for warning in summary.warnings { Terminal.warning(warning) }
        if let reportFile {
            let reportJSON: [UInt8]
            do {
                reportJSON = try RunReport(summary: summary, job: job).json()
            } catch {
                throw CommandFailure("cannot write the report '\(reportFile.path)': \(error.localizedDescription)", code: .outputNotWritable)
            }
            do throws(MediaError) {
                try reportFile.write(reportJSON)
                try reportFile.commit()
            } catch {
                throw CommandFailure(error)
            }
        }
        reported = true
        if !quiet {
            SummaryPrinter.print(summary, job: job)
            if let estimate = SizeEstimate(job: job) {
                let actual = Double(summary.bytes)
                let off = estimate.bytes > 0 ? (actual - estimate.bytes) / estimate.bytes * 100 : 0
                Terminal.line("estimate    " + estimate.text + String(format: "; actual %.2f MB (%+.1f%%)", actual / 1_048_576, off))
            }
        }
        if stats { SummaryPrinter.printStages(summary) }
        if let sig = signals.signal {
            if !quiet { Terminal.line("livefilter: stopped by signal \(sig); the output holds what was done") }
            throw ExitCode(sig == SIGTERM ? LiveFilterExit.terminated.rawValue : LiveFilterExit.interrupted.rawValue)
        }
        if serveAfter, let server { Serving.keepServing(server, until: signals) }
    }
}
