import ArgumentParser
import Foundation
import Synchronization
import MediaIO
import Pipeline
import Shards

/// The options that say how a job is split, shared by `plan` and `run --shards`.
struct ShardOptions: ParsableArguments {
    @Option(help: "Split the job into N shards (ranges of the output, each starting on a segment boundary or keyframe).")
    var shards: Int?

    @Option(help: "Split the job into shards of about this many seconds each (instead of --shards).")
    var shardDuration: Double?

    @Option(help: "Where the shards write their parts (a folder every node sees; default OUTPUT.parts next to the output).")
    var workDir: String?

    @Option(help: "Seconds before each shard that its encoder also encodes and drops, so it reaches the shard as a single run's does (more: closer to the single run, more work).")
    var shardWarmup: Double = 4

    func validate() throws {
        if shards != nil && shardDuration != nil { throw ValidationError("--shards and --shard-duration cannot be used together") }
        if let shards, !(1...10_000).contains(shards) { throw ValidationError("--shards must be between 1 and 10000") }
        if let shardDuration, !(shardDuration >= 1 && shardDuration.isFinite) { throw ValidationError("--shard-duration must be at least 1 second") }
        if !(shardWarmup >= 0 && shardWarmup <= 60) { throw ValidationError("--shard-warmup must be between 0 and 60 seconds") }
    }

    var count: ShardCount? {
        if let shards { return .count(shards) }
        return shardDuration.map { .duration($0) }
    }
}

/// One place that turns plan and shard failures into the documented exit codes.
extension CommandFailure {
    init(_ error: ShardError) {
        let text = "\(error.description); \(error.recoverySuggestion)"
        switch error {
        case let .media(media): self.init(media)
        case let .job(job): self.init(job)
        case .inputChanged: self.init(text, code: .inputChanged)
        case .partsMissing, .partsInconsistent, .joinInProgress: self.init(text, code: .partsIncomplete)
        case .cluster: self.init(text, code: .clusterTaskFailed)
        case .planUnreadable, .noSuchShard, .cannotSplit: self.init(text, code: .usage)
        }
    }
}

enum Sharding {
    /// Writes the plan for a job given on this command line.
    static func makePlan(input: String, output: String, job: JobOptions, shards: ShardOptions, overwrite: Bool,
                         planPath: String, interrupt: InputInterrupt = InputInterrupt()) throws -> ShardPlan {
        guard let count = shards.count else { throw ValidationError("say how to split: --shards N or --shard-duration S") }
        var config = try job.configuration(input: input, output: output)
        config.overwrite = overwrite
        FFmpegLog.setLevel(.quiet)
        do {
            let plan = try ShardPlanner.plan(configuration: config, arguments: Array(CommandLine.arguments.dropFirst()),
                                             shards: count, workDirectory: shards.workDir, warmup: shards.shardWarmup,
                                             interrupt: interrupt)
            try FileManager.default.createDirectory(atPath: plan.workDirectory, withIntermediateDirectories: true)
            try plan.write(to: planPath)
            return plan
        } catch let error as ShardError {
            throw CommandFailure(error)
        }
    }

    /// `makePlan` on a thread of its own (it opens, scans and decodes the input: blocking reads),
    /// stopped by SIGINT or SIGTERM wherever it reads: exit 130 or 143, nothing written.
    static func makePlanOffThePool(input: String, output: String, job: JobOptions, shards: ShardOptions, overwrite: Bool,
                                   planPath: String) async throws -> ShardPlan {
        let signals = StopSignals()
        let interrupt = InputInterrupt()
        struct Made: @unchecked Sendable { let result: Result<ShardPlan, any Error> }
        let made: Made = await signals.cancelling {
            await offThePool(onCancel: { interrupt.stop() }) {
                Made(result: Result { try makePlan(input: input, output: output, job: job, shards: shards, overwrite: overwrite,
                                                   planPath: planPath, interrupt: interrupt) })
            }
        }
        if let sig = signals.signal {
            Terminal.line("livefilter: stopped by signal \(sig) while planning; nothing was written")
            throw ExitCode(sig == SIGTERM ? LiveFilterExit.terminated.rawValue : LiveFilterExit.interrupted.rawValue)
        }
        return try made.result.get()
    }

    /// The job's configuration as the plan's command line describes it, read in the plan's folder.
    static func configuration(of plan: ShardPlan) throws -> JobConfiguration {
        _ = FileManager.default.changeCurrentDirectoryPath(plan.directory)
        let command = try LiveFilterCommand.parseAsRoot(plan.arguments)
        let job: JobOptions
        switch command {
        case let run as RunCommand: job = run.job
        case let planCommand as PlanCommand: job = planCommand.job
        default: throw CommandFailure(ShardError.planUnreadable(plan.id, reason: "its command line is not a run or a plan"))
        }
        var config = try job.configuration(input: plan.input.url, output: plan.output)
        config.overwrite = plan.overwrite
        return config
    }

    /// Runs one task of a plan (the shard named, or the one the cluster's array index names).
    static func runTask(planPath: String, shard: String?, quiet: Bool, verbose: Bool = false) async throws {
        let plan: ShardPlan
        do { plan = try ShardPlan.read(planPath) } catch { throw CommandFailure(error) }
        let task: ShardTask
        var source = "--shard"
        if let shard {
            guard let t = ShardTask(parsing: shard) else { throw ValidationError("--shard takes a shard number or 'audio', got '\(shard)'") }
            task = t
        } else {
            do {
                guard let (t, variable) = try ShardTask.fromEnvironment(ProcessInfo.processInfo.environment, plan: plan) else {
                    throw ValidationError("--plan without --shard needs the task's index in \(ShardTask.indexVariables.joined(separator: ", ")) (set by Slurm, Kubernetes Indexed Jobs and AWS Batch array jobs)")
                }
                (task, source) = (t, variable)
            } catch let error as ShardError {
                throw CommandFailure(error)
            }
        }
        let config = try configuration(of: plan)
        FFmpegLog.setLevel(verbose ? .warning : .quiet)
        if !quiet { Terminal.line("livefilter: \(task) of plan \(plan.id) (\(source)) on \(ProcessInfo.processInfo.hostName)") }
        let signals = StopSignals()
        let progressPath = plan.progressPath(task == .audio ? nil : { if case let .video(k) = task { k } else { nil } }())
        try? FileManager.default.createDirectory(atPath: (progressPath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let lastWrite = Mutex(Date.distantPast)
        let running = Task { () -> Result<PartManifest, ShardError> in
            do throws(ShardError) {
                return .success(try await ShardRunner.run(plan: plan, task: task, configuration: config, progress: { p in
                    guard lastWrite.withLock({ last in
                        guard Date().timeIntervalSince(last) > 1 else { return false }
                        last = Date()
                        return true
                    }) else { return }
                    try? "\(p.framesWritten)\n".write(toFile: progressPath, atomically: true, encoding: .utf8)
                }))
            } catch {
                return .failure(error)
            }
        }
        signals.onStop { running.cancel() }
        let manifest: PartManifest
        do throws(ShardError) {
            manifest = try await running.value.get()
        } catch {
            try? FileManager.default.removeItem(atPath: progressPath)
            if signals.signal != nil { throw ExitCode(LiveFilterExit.interrupted.rawValue) }
            throw CommandFailure(error)
        }
        try? FileManager.default.removeItem(atPath: progressPath)
        if !quiet {
            Terminal.line(String(format: "livefilter: %@ done: %d %@, %d pre-roll, %@, %.1f s wall, %.1f CPU s → %@",
                                 task.description, manifest.frames, task == .audio ? "packets" : "frames", manifest.prerollFrames,
                                 Format.bytes(manifest.bytes), manifest.wallSeconds, manifest.cpuSeconds, plan.partDirectory(task == .audio ? nil : manifest.shard)))
        }
    }

    static func describe(_ plan: ShardPlan, planPath: String) {
        Terminal.line("plan        \(planPath) (\(plan.id))")
        Terminal.line("input       \(plan.input.url)")
        Terminal.line("output      \(plan.output)")
        Terminal.line("parts       \(plan.workDirectory)")
        let unit = plan.timing.mode == .ticks ? "ticks" : "input time"
        for s in plan.shards {
            let range = "\(s.start == .min / 2 ? "start" : String(s.start))..<\(s.end.map(String.init) ?? "end")"
            Terminal.line("shard \(s.index)     \(unit) \(range), \(s.frames) frames, \(s.prerollFrames) pre-roll"
                          + (plan.hls != nil ? ", from segment \(s.firstSegment)" : ""))
        }
        if plan.audio { Terminal.line("audio       one task for the whole input (array index \(plan.shards.count))") }
        if plan.shards.count < plan.requested {
            let why = plan.hls != nil ? "shards start on segment boundaries" : "shards of a file output start on input keyframes"
            Terminal.line("note        \(plan.shards.count) shards, not \(plan.requested): \(why), and this input has no more places to start one")
        }
    }
}

struct PlanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Split a job into shards for a cluster: write the plan every task reads.",
        discussion: """
            Then run each task on any engine — livefilter run --plan PLAN --shard K for K in 0…N-1 and \
            'audio' (or let the engine's array index choose: SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX, \
            AWS_BATCH_JOB_ARRAY_INDEX; index N is the audio task) — and livefilter join PLAN when all \
            are done. Or let livefilter submit it all to Slurm: livefilter run INPUT -o OUTPUT --shards N --engine slurm.
            """)

    @Argument(help: "Input file (a live stream cannot be split).")
    var input: String

    @Option(name: [.short, .long], help: "Output path: .mp4 .mov .mkv .ts, .m3u8 (HLS) or frames/%05d.png.")
    var output: String

    @Option(help: "Where to write the plan (JSON).")
    var plan: String

    @OptionGroup var shards: ShardOptions

    @OptionGroup var job: JobOptions

    @Flag(name: [.customShort("y"), .long], help: "Let the join replace an existing output.")
    var overwrite = false

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        logging.bootstrap()
        let plan = try await Sharding.makePlanOffThePool(input: input, output: output, job: job, shards: shards,
                                                         overwrite: overwrite, planPath: self.plan)
        Sharding.describe(plan, planPath: self.plan)
    }
}

struct JoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join the parts of a plan into its output (after every task finished).")

    @Argument(help: "The plan (JSON) the tasks ran.")
    var plan: String

    @Flag(help: "Leave the parts in the work folder after joining.")
    var keepParts = false

    @Flag(name: [.short, .long], help: "No summary.")
    var quiet = false

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        logging.bootstrap()
        let plan: ShardPlan
        do { plan = try ShardPlan.read(self.plan) } catch { throw CommandFailure(error) }
        FFmpegLog.setLevel(.quiet)
        let summary: JoinSummary
        do { summary = try ShardJoiner.join(plan: plan, keepParts: keepParts) } catch { throw CommandFailure(error) }
        if !quiet {
            Terminal.line(String(format: "joined      %@: %d frames from %d shards, %d files, %@ in %.2f s (tasks: %.1f CPU s, %d pre-roll frames)",
                                 summary.output, summary.frames, plan.shards.count, summary.files, Format.bytes(summary.bytes),
                                 summary.seconds, summary.taskCPUSeconds, summary.prerollFrames))
        }
    }
}
