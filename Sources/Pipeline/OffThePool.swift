import Foundation

/// Runs blocking work (opening an input, waiting for a child process) on a thread of its own and
/// suspends until it is done: the cooperative pool's few threads never block.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.stackSize = 4 << 20
        thread.start()
    }
}

/// `offThePool` for blocking work that can be told to stop: cancelling the calling task calls
/// `onCancel` (at once if it is cancelled already), which must make `body` return promptly (an
/// `InputInterrupt`'s `stop`). The result is still awaited, so nothing `body` owns outlives the call.
public func offThePool<T: Sendable>(onCancel: @escaping @Sendable () -> Void, _ body: @escaping @Sendable () -> T) async -> T {
    await withTaskCancellationHandler {
        await offThePool(body)
    } onCancel: {
        onCancel()
    }
}
