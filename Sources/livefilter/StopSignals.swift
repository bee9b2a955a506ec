import Dispatch
import Foundation
import Glibc
import MediaIO
import Synchronization

/// Turns SIGINT and SIGTERM into a flag the pipeline polls, so a run finishes a playable output.
/// A second signal leaves at once, removing every unfinished temporary file.
final class StopSignals: @unchecked Sendable {
    private let received = Atomic<Int32>(0)
    // Kept alive for the life of the process; only touched in init.
    private let sources: [any DispatchSourceSignal]

    init() {
        let signals = [SIGINT, SIGTERM]
        for s in signals { Glibc.signal(s, SIG_IGN) }
        // A file-size limit then fails the write (EFBIG) instead of killing the process.
        Glibc.signal(SIGXFSZ, SIG_IGN)
        Glibc.signal(SIGPIPE, SIG_IGN)
        sources = signals.map { DispatchSource.makeSignalSource(signal: $0, queue: .global()) }
        for (source, sig) in zip(sources, signals) {
            source.setEventHandler { [self] in
                if received.exchange(sig, ordering: .relaxed) != 0 {
                    // Leaving without unwinding: no run discards its outputs, so no temporary file may stay.
                    AtomicFile.removeUnfinishedTemporaries()
                    Foundation.exit(128 + sig)
                }
            }
            source.resume()
        }
    }

    /// The first signal received, or nil.
    var signal: Int32? {
        let s = received.load(ordering: .relaxed)
        return s == 0 ? nil : s
    }
}
