import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The names created in, or renamed into, one folder, as it happens (Linux inotify): a test waits
/// for a file to appear, or sees each publication of a playlist (an atomic rename), instead of
/// listing the folder on a timer. Start it before whatever writes there; `stop()` it when done
/// (`defer`), which ends `names`.
final class FolderWatch: @unchecked Sendable {
    let folder: URL
    let names: AsyncStream<String>
    private let lock = NSLock()
    private var wakeWriteEnd: Int32

    init(_ folder: URL) throws {
        self.folder = folder
        let inotify = inotify_init1(Int32(IN_CLOEXEC))
        guard inotify >= 0 else { throw ToolFailure("inotify_init1: \(String(cString: strerror(errno)))") }
        guard inotify_add_watch(inotify, folder.path, UInt32(IN_CREATE | IN_MOVED_TO)) >= 0 else {
            let reason = String(cString: strerror(errno))
            close(inotify)
            throw ToolFailure("inotify_add_watch \(folder.path): \(reason)")
        }
        // A pipe whose only job is to wake the reader thread when the watch stops.
        let wake: (read: Int32, write: Int32)
        do {
            wake = try closeOnExecPipe()
        } catch {
            close(inotify)
            throw error
        }
        wakeWriteEnd = wake.write
        let (names, continuation) = AsyncStream<String>.makeStream()
        self.names = names
        let wakeReadEnd = wake.read
        Thread {
            Self.read(inotify, until: wakeReadEnd) { continuation.yield($0) }
            continuation.finish()
            close(inotify)
            close(wakeReadEnd)
        }.start()
    }

    deinit { stop() }

    /// Ends the watch and its `names` (idempotent).
    func stop() {
        lock.withLock {
            guard wakeWriteEnd >= 0 else { return }
            close(wakeWriteEnd)  // the reader sees the pipe end
            wakeWriteEnd = -1
        }
    }

    /// Blocks in poll(2) until an event or the wake pipe's end; hands on each event's name.
    private static func read(_ inotify: Int32, until wake: Int32, _ found: (String) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            var fds = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, -1)
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 || fds[1].revents != 0 { return }
            let n = Glibc.read(inotify, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            // struct inotify_event: wd, mask, cookie, len (4 bytes each), then len bytes of NUL-padded name.
            var offset = 0
            while offset + 16 <= n {
                let length = Int(buffer[offset + 12]) | Int(buffer[offset + 13]) << 8
                    | Int(buffer[offset + 14]) << 16 | Int(buffer[offset + 15]) << 24
                let name = buffer[(offset + 16)..<(offset + 16 + length)].prefix { $0 != 0 }
                if !name.isEmpty { found(String(decoding: name, as: UTF8.self)) }
                offset += 16 + length
            }
        }
    }

    /// Waits for the first name for which `matches` holds; throws, naming what did appear, when
    /// `timeout` passes first.
    func first(_ what: String, within timeout: Duration, where matches: @escaping @Sendable (String) -> Bool) async throws -> String {
        switch await EndToEndTests.first(of: names, within: timeout, where: matches) {
        case let .found(name):
            return name
        case let .ended(seen), let .timedOut(seen):
            throw ToolFailure("waited \(timeout) for \(what) in \(folder.path); appeared: \(seen.suffix(20))")
        }
    }
}
