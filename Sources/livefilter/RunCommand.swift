import ArgumentParser
import Filters
import Foundation
import HLS
import MediaIO
import Pipeline
import Serving
import Shards

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

    @Argument(help: ArgumentHelp("Input file or URL (not with --plan); without it, $LIVEFILTER_INPUT_URL. ${NAME} in it is replaced by the secret NAME (--secrets).",
                                 valueName: "input"))
    var input: String?

    @Option(help: ArgumentHelp("A file of NAME=VALUE lines (readable by its owner only): ${NAME} in the input or --control-token is replaced by its value (else by the environment variable NAME), so a stream key, a passphrase or a token is not on the command line for `ps` to show.",
                               valueName: "file"))
    var secrets: String?

    @Option(name: [.short, .long], help: "Output path: .mp4 .mov .mkv .ts, .m3u8 (HLS), frames/%05d.png, or null (filter and drop every picture, like ffmpeg's -f null).")
    var output: String?

    @Option(help: "Run one task of a plan (livefilter plan): the shard --shard names, else the one the cluster's array index names (SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX or AWS_BATCH_JOB_ARRAY_INDEX). With --engine: where to write the plan.")
    var plan: String?

    @Option(help: "With --plan: the shard to run (0…N-1), or 'audio'.")
    var shard: String?

    @OptionGroup(title: "Scale-out") var sharding: ShardOptions

    @Option(help: "With --shards: the cluster engine that runs the shards and the join (slurm).")
    var engine: ClusterEngine?

    @Option(help: "Slurm partition for the tasks and the join.")
    var partition: String?

    @Option(parsing: .unconditionalSingleValue, help: "An sbatch option for every task, as sbatch takes it (repeat for more), e.g. --slurm-option=--time=01:00:00.")
    var slurmOption: [String] = []

    @Flag(help: "With --engine: submit, print the job ids and return without waiting.")
    var detach = false

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

    @Option(help: ArgumentHelp("Change the chain while it runs: GET /chain and PUT /chain (a new chain or FILTER.key=value) at HOST:PORT, applied at the next tick; with --serve at the same address, on the player page too. Loopback only unless --control-token is given. A change reads no new files (overlay, font=, track=) unless --control-files names a folder.",
                               valueName: "host:port"))
    var control: ListenAddress?

    @Option(help: ArgumentHelp("With --control: require 'Authorization: Bearer TOKEN' on /chain, on loopback too. Needed to bind --control to a non-loopback address. Also $LIVEFILTER_CONTROL_TOKEN, or ${NAME} from --secrets.",
                               valueName: "token"))
    var controlToken: String?

    @Option(help: ArgumentHelp("With --control: a change may read files (overlay FILE, font=, track=) in this folder only; a relative path starts there, and .. or a symbolic link may not lead out. Without it a change reads no files but those --chain reads.",
                               valueName: "dir"))
    var controlFiles: String?

    @OptionGroup(title: "HTTP (with --serve)") var http: HTTPOptions

    @OptionGroup var logging: LoggingOptions

    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    func validate() throws {
        if progressFile != nil && progress != .json { throw ValidationError("--progress-file needs --progress json") }
        let split = sharding.count != nil
        if plan != nil, !split {
            if input != nil || output != nil { throw ValidationError("--plan runs a task of the plan: its input and output come from the plan") }
        } else {
            guard input != nil || Self.environment[SecretValues.inputVariable] != nil else {
                throw ValidationError("missing the input (or $\(SecretValues.inputVariable), or --plan PLAN to run a task of a plan)")
            }
            guard output != nil else { throw ValidationError("missing -o OUTPUT") }
        }
        if shard != nil, plan == nil { throw ValidationError("--shard needs --plan") }
        if split, engine == nil { throw ValidationError("--shards needs --engine slurm (or write a plan with livefilter plan and run its tasks on any engine)") }
        if engine != nil, !split { throw ValidationError("--engine needs --shards N or --shard-duration S") }
        if (partition != nil || !slurmOption.isEmpty || detach), engine == nil { throw ValidationError("--partition, --slurm-option and --detach need --engine slurm") }
        if split, serve != nil { throw ValidationError("--serve serves one run's output; a sharded job's output appears at the join") }
        if let output { try Serving.validate(serve: serve, after: serveAfter, output: output) }
        if let control {
            if split || plan != nil { throw ValidationError("--control changes one run's chain; a sharded job's tasks run elsewhere") }
            if controlToken == nil, Self.environment[SecretValues.tokenVariable] == nil, !control.isLoopback {
                throw ValidationError("--control on \(control.host) is reachable from other machines: give --control-token TOKEN, or bind to 127.0.0.1")
            }
        } else if controlToken != nil || Self.environment[SecretValues.tokenVariable] != nil {
            throw ValidationError("--control-token needs --control HOST:PORT")
        } else if controlFiles != nil {
            throw ValidationError("--control-files needs --control HOST:PORT")
        }
        _ = try changeFiles()
        if controlToken?.isEmpty == true { throw ValidationError("--control-token must not be empty") }
    }

    /// What a chain changed over `--control` may read: the files in `--control-files`, else none.
    func changeFiles() throws -> ChainFileAccess {
        guard let controlFiles else { return .none }
        do throws(ChainFileAccess.FolderError) {
            return try .within(controlFiles)
        } catch {
            throw ValidationError("--control-files \(error)")
        }
    }

    func run() async throws {
        logging.bootstrap()
        // Metrics go to /metrics and /status when there is a server to show them.
        let status = serve.map { _ in RunStatus() }
        status?.bootstrap()
        if engine != nil, let input, let output {
            return try await runOnCluster(input: input, output: output)
        }
        if let plan {
            return try await Sharding.runTask(planPath: plan, shard: shard, quiet: quiet, verbose: verbose)
        }
        // Secrets from --secrets or the environment, hidden from every message from here on.
        let secretValues = try SecretValues(file: secrets)
        let controlToken = try secretValues.controlToken(self.controlToken)
        guard let input = try secretValues.input(self.input), let output else { throw ValidationError("missing the input and -o OUTPUT") }
        var config = try self.job.configuration(input: input, output: output)
        config.overwrite = overwrite
        config.chainControl = control != nil
        // A file's HLS served while it runs is EVENT (the plan decides): players see it grow.
        config.servedWhileRunning = serve != nil
        // Blocking playlist reloads and hinted parts held by our server wake on the writer's
        // publications, in process (no inotify for the run's own output).
        let publications = serve.map { _ in PublicationBoard() }
        if let publications { config.onFilePublished = { publications.notify(path: $0) } }

        FFmpegLog.setLevel(verbose ? .warning : .quiet)
        FFmpegLog.captureNetworkWarnings(verbose: verbose)
        // The run's input warnings, read while it opens (a listener's refused publishers) and runs.
        let inputWarnings = InputWarningLog()
        config.inputOptions.warnings = inputWarnings
        // Ctrl-C finishes a playable output with everything the encoder was given.
        let session = ExportSession(config, onCancel: .finishOutput)
        // Made before the open (and before saying it waits), so a signal stops a listener waiting
        // for its first publisher too.
        let signals = StopSignals()
        // A listener may wait for hours: say so, rather than look hung; and say at once whom it
        // refuses meanwhile (a wrong passphrase or key, no video), not when the first one is taken.
        let waitsForPublisher = Demuxer.waitsForPublisher(input, options: config.inputOptions)
        if waitsForPublisher { Terminal.line("livefilter: waiting for a publisher at \(input.redactingSecrets)") }
        let waitingWarnings = Task {
            guard waitsForPublisher else { return }
            for await _ in inputWarnings.arrivals {
                for w in NetworkWarnings.drain(inputWarnings) { Terminal.warning(w) }
            }
        }
        var server: HTTPService?
        // A channel may wait long for its first publisher (a listener) or origin: /status answers
        // meanwhile (live, not yet ready). The chain endpoint on the same address needs the job.
        if let serve, let status, control != serve {
            server = try await Serving.start(output: output, at: serve, status: status, limits: http.limits,
                                             chain: nil, publications: publications)
        }
        let job: TranscodeJob
        do {
            defer { waitingWarnings.cancel() }
            let opened: Result<TranscodeJob, ExportError> = await signals.cancelling {
                do throws(ExportError) { return .success(try await session.open()) } catch { return .failure(error) }
            }
            job = try opened.get()
        } catch {
            await waitingWarnings.value
            server?.shutdown()
            if let sig = signals.signal {
                if !quiet { Terminal.line("livefilter: stopped by signal \(sig) before the input opened; nothing was written") }
                throw ExitCode(sig == SIGTERM ? LiveFilterExit.terminated.rawValue : LiveFilterExit.interrupted.rawValue)
            }
            throw CommandFailure(error.underlying, context: NetworkWarnings.drain(inputWarnings).last)
        }
        await waitingWarnings.value
        for w in NetworkWarnings.drain(inputWarnings) { Terminal.warning(w) }
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
        let changeFiles = try changeFiles()
        let chainEndpoint = job.chainControl.map {
            ChainEndpoint(controller: LiveChainController(control: $0, files: changeFiles), token: controlToken)
        }
        var controlServer: HTTPService?
        if let serve, let status, server == nil {
            server = try await Serving.start(output: output, at: serve, status: status, limits: http.limits,
                                             chain: control == serve ? chainEndpoint : nil, publications: publications)
        }
        if let control, let chainEndpoint, control != serve {
            controlServer = try await Serving.startControl(chainEndpoint, at: control, limits: http.limits)
        }
        defer { server?.shutdown(); controlServer?.shutdown() }
        let bar = ProgressBar(enabled: !quiet && (progress == .bar || (progress == .auto && Terminal.isInteractive)))
        let json = progress == .json ? try JSONProgressWriter(path: progressFile) : nil
        let running = Task { () -> Result<JobSummary, ExportError> in
            do throws(ExportError) { return .success(try await session.run()) } catch { return .failure(error) }
        }
        signals.onStop { running.cancel() }
        // The sequence ends when the run does.
        for await p in session.progress {
            let warnings = NetworkWarnings.drain(inputWarnings)
            if !warnings.isEmpty { bar.clear() }
            for w in warnings { Terminal.warning(w) }
            bar.update(p.details)
            json?.write(p.details)
        }
        let summary: JobSummary
        do throws(ExportError) {
            summary = try await running.value.get()
        } catch {
            bar.clear()
            throw CommandFailure(error.underlying, context: NetworkWarnings.drain(inputWarnings).last)
        }
        bar.clear()
        for w in NetworkWarnings.drain(inputWarnings) { Terminal.warning(w) }
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
        await controlServer?.stop()
        if serveAfter, let server { await Serving.keepServing(server, until: signals) } else { await server?.stop() }
    }

    /// `--shards N --engine slurm`: writes the plan, submits the tasks and the join to Slurm, and
    /// follows them (progress summed from the parts) unless `--detach`.
    func runOnCluster(input: String, output: String) async throws {
        let workDir = sharding.workDir ?? ShardPlan.defaultWorkDirectory(forOutput: URL(fileURLWithPath: output).standardizedFileURL.path)
        let planPath = plan ?? workDir + "/plan.json"
        try? FileManager.default.createDirectory(atPath: workDir, withIntermediateDirectories: true)
        let slurm = SlurmEngine(partition: partition, options: slurmOption)
        // Planning scans the input and sbatch is a child process: both off the cooperative pool.
        let (job, sharding, overwrite) = (job, sharding, overwrite)
        let submitted: Result<(ShardPlan, SlurmEngine.Submission), any Error> = await offThePool {
            Result {
                let made = try Sharding.makePlan(input: input, output: output, job: job, shards: sharding, overwrite: overwrite,
                                                 planPath: planPath)
                do throws(ShardError) { return (made, try slurm.submit(plan: made, planPath: planPath)) } catch { throw CommandFailure(error) }
            }
        }
        let (made, submission) = try submitted.get()
        if !quiet {
            Sharding.describe(made, planPath: planPath)
            Terminal.line("slurm       tasks: job \(submission.tasks) (array 0-\(made.taskCount - 1)); join: job \(submission.join) (afterok)")
        }
        if detach {
            print("\(submission.tasks) \(submission.join)")
            return
        }
        let signals = StopSignals()
        let total = max(1, made.shards.reduce(0) { $0 + $1.frames })
        let start = Date()
        let showBar = !quiet && Terminal.isInteractive
        let following = Task { () -> ShardError? in
            do throws(ShardError) {
                try await slurm.wait(submission, plan: made) { done in
                    guard showBar else { return }
                    let fraction = min(1, Double(done) / Double(total))
                    Terminal.write(String(format: "\r[%@%@] %3.0f%%  frame %lld of %lld  %@\u{1B}[K",
                                          String(repeating: "#", count: Int(fraction * 24)), String(repeating: " ", count: 24 - Int(fraction * 24)),
                                          fraction * 100, done, total, Format.duration(Date().timeIntervalSince(start))))
                }
                return nil
            } catch {
                return error
            }
        }
        signals.onStop { following.cancel() }
        if let error = await following.value {
            if showBar { Terminal.write("\r\u{1B}[K") }
            if signals.signal != nil {
                await offThePool { slurm.cancel(submission) }
                Terminal.line("livefilter: stopped; Slurm jobs \(submission.tasks) and \(submission.join) were cancelled")
                throw ExitCode(LiveFilterExit.interrupted.rawValue)
            }
            throw CommandFailure(error)
        }
        if showBar { Terminal.write("\r\u{1B}[K") }
        if !quiet {
            Terminal.line(String(format: "joined      %@ (%lld frames, %d shards) in %.1f s; logs in %@/logs",
                                 made.output, total, made.shards.count, Date().timeIntervalSince(start), made.workDirectory))
        }
    }
}

/// Cluster engines livefilter submits to (it schedules nothing itself).
enum ClusterEngine: String, ExpressibleByArgument, CaseIterable {
    case slurm
}
