import Dispatch

/// Runs a job's tasks on a dispatch queue of its own instead of Swift's cooperative pool: a job
/// is long synchronous work (decoding, filtering, encoding), and holding a cooperative thread for
/// minutes would starve every other task of the embedding app on a 2-core machine.
final class JobExecutor: TaskExecutor, @unchecked Sendable {
    private let queue = DispatchQueue(label: "livefilter.job", qos: .userInitiated)

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { unowned.runSynchronously(on: executor) }
    }
}
