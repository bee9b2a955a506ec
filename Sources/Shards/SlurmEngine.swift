import Foundation
import Logging
import MediaIO
import Pipeline

/// Submits a plan to Slurm and follows it: one array job of `plan.taskCount` tasks (the video
/// shards, then the audio task) and a join job that starts only when every task succeeded
/// (`--dependency=afterok`). Slurm schedules, places, retries (`--requeue`) and reports;
/// livefilter only writes the plan, submits, and reads the jobs' state and the parts' progress.
public struct SlurmEngine: Sendable {
    public var partition: String?
    /// Passed to every `sbatch` as they are (e.g. `--time=02:00:00`, `--mem=4G`, `--cpus-per-task=2`).
    public var options: [String]
    /// The livefilter the tasks run: this one, by absolute path (it must be on a path every node sees).
    public var executable: String

    public init(partition: String? = nil, options: [String] = [], executable: String = SlurmEngine.currentExecutable) {
        self.partition = partition
        self.options = options
        self.executable = executable
    }

    public static var currentExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    public struct Submission: Sendable, Equatable {
        public var tasks: String
        public var join: String
    }

    /// Submits the tasks and the join; returns their job ids.
    public func submit(plan: ShardPlan, planPath: String) throws(ShardError) -> Submission {
        do {
            try FileManager.default.createDirectory(atPath: plan.workDirectory + "/logs", withIntermediateDirectories: true)
        } catch {
            throw .media(.outputNotWritable(plan.workDirectory, reason: error.localizedDescription))
        }
        let name = "livefilter-\(plan.id.prefix(8))"
        var common: [String] = ["--parsable"]
        if let partition { common.append("--partition=\(partition)") }
        common += options
        let tasks = try sbatch(common + [
            "--job-name=\(name)", "--array=0-\(plan.taskCount - 1)", "--requeue",
            "--output=\(plan.workDirectory)/logs/task-%a.log",
            "--wrap=exec \(quoted(executable)) run --plan \(quoted(planPath))",
        ])
        let join = try sbatch(common + [
            "--job-name=\(name)-join", "--dependency=afterok:\(tasks)", "--kill-on-invalid-dep=yes",
            "--output=\(plan.joinLogPath)",
            "--wrap=exec \(quoted(executable)) join \(quoted(planPath))",
        ])
        Logger(label: "livefilter.shards").info("submitted to Slurm", metadata: [
            "tasks_job": "\(tasks)", "join_job": "\(join)", "array": "0-\(plan.taskCount - 1)"])
        return Submission(tasks: tasks, join: join)
    }

    /// Where the jobs are, as Slurm reports them.
    public struct Status: Sendable {
        /// Array tasks that ended badly: (array index, state, exit code).
        public var failedTasks: [(index: Int, state: String, exitCode: String)]
        /// The join job's state (PENDING, RUNNING, COMPLETED, FAILED…), nil once Slurm forgot it.
        public var joinState: String?
        public var joinExitCode: String?
    }

    public func status(_ submission: Submission) -> Status {
        var failed: [(Int, String, String)] = []
        for record in records(submission.tasks) {
            guard let state = record["JobState"], Self.failedStates.contains(state) else { continue }
            failed.append((Int(record["ArrayTaskId"] ?? "") ?? -1, state, record["ExitCode"] ?? "?"))
        }
        let join = records(submission.join).first
        return Status(failedTasks: failed, joinState: join?["JobState"], joinExitCode: join?["ExitCode"])
    }

    static let failedStates: Set<String> = ["FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED"]

    /// Cancels the tasks and the join.
    public func cancel(_ submission: Submission) {
        _ = Self.run(["scancel", submission.tasks, submission.join])
    }

    /// Waits for the join to finish, calling `progress` with the output frames the tasks have
    /// made so far (summed from the parts' progress files); fails naming the log of a failed task.
    /// Slurm tells no one when a job ends (`sbatch --wait` asks too): its state is asked every half
    /// second, each `scontrol` run off the cooperative pool. Cancelling the task ends the wait
    /// (`ShardError.cluster`); the jobs keep running unless the caller cancels them.
    public func wait(_ submission: Submission, plan: ShardPlan,
                     progress: (Int64) -> Void = { _ in }) async throws(ShardError) {
        var forgotten = 0
        while true {
            if Task.isCancelled { throw .cluster("stopped while waiting") }
            let status: Status = await offThePool { [self] in self.status(submission) }
            if let failure = status.failedTasks.first {
                cancel(submission)
                let task = failure.index == plan.shards.count && plan.audio ? "the audio task" : "shard \(failure.index)"
                throw .cluster("\(task) of Slurm job \(submission.tasks) ended \(failure.state) (exit \(failure.exitCode)); its log: \(plan.logPath(failure.index < plan.shards.count ? failure.index : nil))")
            }
            switch status.joinState {
            case "COMPLETED"?:
                progress(Self.framesDone(plan))
                return
            case let state? where Self.failedStates.contains(state):
                throw .cluster("the join (Slurm job \(submission.join)) ended \(state) (exit \(status.joinExitCode ?? "?")); its log: \(plan.joinLogPath)")
            case nil:
                // Slurm forgets finished jobs after MinJobAge: the output tells how it ended.
                forgotten += 1
                if FileManager.default.fileExists(atPath: plan.output) || plan.outputContainer == .pngSequence, forgotten > 2,
                   !FileManager.default.fileExists(atPath: plan.workDirectory + "/join.lock"),
                   (try? ShardJoiner.manifests(plan)) == nil {
                    progress(Self.framesDone(plan))
                    return
                }
                if forgotten > 10 { throw .cluster("Slurm no longer knows job \(submission.join) and the output is not there; see \(plan.joinLogPath)") }
            default:
                forgotten = 0
            }
            progress(Self.framesDone(plan))
            do { try await Task.sleep(for: .milliseconds(500)) } catch { throw .cluster("stopped while waiting") }
        }
    }

    /// Output frames made so far: finished parts count whole, running ones by their progress file.
    public static func framesDone(_ plan: ShardPlan) -> Int64 {
        var total: Int64 = 0
        for k in plan.shards.indices {
            if let m = PartManifest.read(plan.manifestPath(k)), m.plan == plan.id {
                total += Int64(m.frames)
            } else if let text = try? String(contentsOfFile: plan.progressPath(k), encoding: .utf8),
                      let n = Int64(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                total += n
            }
        }
        return total
    }

    // MARK: Slurm's commands

    private func sbatch(_ arguments: [String]) throws(ShardError) -> String {
        let result = Self.run(["sbatch"] + arguments)
        guard result.status == 0, let id = result.output.split(separator: ";").first.map({ $0.trimmingCharacters(in: .whitespacesAndNewlines) }),
              !id.isEmpty else {
            throw .cluster("sbatch failed (exit \(result.status)): \(result.error.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return id
    }

    /// `scontrol -o show job ID`: one record per line (an array job: one per task), as key=value.
    private func records(_ id: String) -> [[String: String]] {
        let result = Self.run(["scontrol", "-o", "show", "job", id])
        guard result.status == 0 else { return [] }
        return result.output.split(separator: "\n").map { line in
            var record: [String: String] = [:]
            for field in line.split(separator: " ") {
                let pair = field.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if pair.count == 2 { record[String(pair[0])] = String(pair[1]) }
            }
            return record
        }
    }

    private func quoted(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    static func run(_ arguments: [String]) -> (status: Int32, output: String, error: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        do { try process.run() } catch { return (127, "", "cannot run \(arguments[0]): \(error.localizedDescription)") }
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let error = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self), String(decoding: error, as: UTF8.self))
    }
}
