import Foundation
import Synchronization

/// Where the server hears that a file it serves was published (renamed into place, or written and
/// closed), so a request held for it — a blocking playlist reload, a preload-hinted part — is woken
/// by that event, not by a timer.
///
/// Two sources feed it: the process that writes the folder calls `notify(path:)` after each rename
/// (`run --serve`), or a `FolderWatcher` turns the kernel's inotify events into the same calls
/// (`serve DIR`, another process writing). A held request costs a suspended task and an entry
/// here: no thread, no polling.
///
/// A waiter first takes a `Ticket`, then looks at the file, then waits on the ticket: a publication
/// between the look and the wait is not lost, since the ticket already records it.
public final class PublicationBoard: Sendable {
    /// One registered interest in a path; `wait` on it once, or `cancel` it.
    public struct Ticket: Sendable {
        fileprivate let path: String
        fileprivate let id: UInt64
    }

    fileprivate struct Waiter {
        var published = false
        var continuation: CheckedContinuation<Bool, Never>?
    }

    fileprivate struct State {
        var nextID: UInt64 = 0
        var waiters: [String: [UInt64: Waiter]] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// Wakes everything waiting for `path`: call it once the file is in place under its final name
    /// (after the rename). `path` is absolute or relative to the current directory; symbolic links
    /// are resolved, so it matches the server's own path for the file.
    public func notify(path: String) {
        notify(canonical: Self.canonical(path))
    }

    /// Waiters held now (all paths): for tests and `/status`.
    public var waiting: Int { state.withLock { $0.waiters.values.reduce(0) { $0 + $1.count } } }

    /// Registers interest in `path` (already canonical: `canonical(_:)`), before looking at the file.
    func ticket(for path: String) -> Ticket {
        state.withLock { s in
            s.nextID &+= 1
            s.waiters[path, default: [:]][s.nextID] = Waiter()
            return Ticket(path: path, id: s.nextID)
        }
    }

    /// Drops a ticket not waited on (the file was already as wanted).
    func cancel(_ ticket: Ticket) {
        let continuation = state.withLock { s in s.remove(ticket)?.continuation }
        continuation?.resume(returning: false)
    }

    /// Suspends until `ticket`'s path is published (true; at once if it was since the ticket was
    /// taken) or until `deadline` (false). Cancelling the task ends the wait too (false).
    func wait(_ ticket: Ticket, until deadline: ContinuousClock.Instant) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.published(ticket) }
            group.addTask {
                try? await Task.sleep(until: deadline, clock: .continuous)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            self.cancel(ticket)  // the sleeper won: the other child resumes with false
            return first
        }
    }

    private func published(_ ticket: Ticket) async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { s -> Bool? in
                    guard let waiter = s.waiters[ticket.path]?[ticket.id] else { return false }  // cancelled already
                    if waiter.published {
                        _ = s.remove(ticket)
                        return true
                    }
                    s.waiters[ticket.path]?[ticket.id]?.continuation = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            cancel(ticket)
        }
    }

    func notify(canonical path: String) {
        let woken = state.withLock { s -> [CheckedContinuation<Bool, Never>] in
            guard var waiters = s.waiters[path] else { return [] }
            var woken: [CheckedContinuation<Bool, Never>] = []
            for (id, waiter) in waiters {
                if let continuation = waiter.continuation {
                    woken.append(continuation)
                    waiters[id] = nil
                } else {
                    waiters[id]?.published = true
                }
            }
            s.waiters[path] = waiters.isEmpty ? nil : waiters
            return woken
        }
        for continuation in woken { continuation.resume(returning: true) }
    }

    /// The form paths take on the board: absolute, standardized, symbolic links resolved.
    static func canonical(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
    }
}

private extension PublicationBoard.State {
    /// Removes a ticket's waiter and returns it (nil when it was already gone).
    mutating func remove(_ ticket: PublicationBoard.Ticket) -> PublicationBoard.Waiter? {
        guard let waiter = waiters[ticket.path]?.removeValue(forKey: ticket.id) else { return nil }
        if waiters[ticket.path]?.isEmpty == true { waiters[ticket.path] = nil }
        return waiter
    }
}
