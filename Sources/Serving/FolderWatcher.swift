import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Tells a `PublicationBoard` of every file renamed into, or written and closed in, a folder and
/// its subfolders one level down (a ladder's `DIR/720p/`), from the kernel's inotify events: for
/// `serve DIR`, where another process writes the folder. One descriptor and one Dispatch read source
/// (the events arrive on Dispatch's own epoll thread): no thread of ours, no polling.
///
/// Linux only; elsewhere `start` returns nil and held requests wait for their deadline.
public final class FolderWatcher: Sendable {
    private let descriptor: Int32
    /// Dispatch sources are thread-safe (`cancel` from any thread); the overlay does not say so yet.
    nonisolated(unsafe) private let source: any DispatchSourceRead
    /// Watch descriptor → the folder it watches (canonical path).
    private let folders: Mutex<[Int32: String]>

    private init(descriptor: Int32, source: any DispatchSourceRead, folders: [Int32: String]) {
        self.descriptor = descriptor
        self.source = source
        self.folders = Mutex(folders)
    }

    /// Watches `folder` and the folders in it (and those made in it later), feeding `board`. A
    /// `folder` not made yet (`run --serve` starts serving before the run makes its output folder)
    /// is watched from the moment it appears in its parent. Nil when inotify is not available
    /// (another OS, the per-user watch limit reached, no parent folder either).
    public static func start(_ folder: String, board: PublicationBoard) -> FolderWatcher? {
        #if os(Linux)
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        let root = PublicationBoard.canonical(folder)
        // The source is made only once a watch holds: Dispatch traps on releasing a source never resumed.
        let watches = Self.watch(root, on: fd) ?? Self.watch((root as NSString).deletingLastPathComponent, on: fd)
        guard let watches else {
            close(fd)
            return nil
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue(label: "livefilter.folder-watcher"))
        let watcher = FolderWatcher(descriptor: fd, source: source, folders: [watches.descriptor: watches.folder])
        watcher.watchSubfolders(of: root)
        source.setEventHandler { [watcher] in watcher.drain(board: board, root: root) }
        source.setCancelHandler { close(fd) }
        source.resume()
        return watcher
        #else
        return nil
        #endif
    }

    /// Stops watching and closes the descriptor.
    public func stop() {
        source.cancel()
    }

    #if os(Linux)
    /// A watch on `folder` when it is a folder.
    private static func watch(_ folder: String, on descriptor: Int32) -> (descriptor: Int32, folder: String)? {
        var info = stat()
        guard stat(folder, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { return nil }
        let mask = UInt32(IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE | IN_ONLYDIR)
        let wd = inotify_add_watch(descriptor, folder, mask)
        return wd >= 0 ? (wd, folder) : nil
    }

    private func watch(_ folder: String) {
        guard let added = Self.watch(folder, on: descriptor) else { return }
        folders.withLock { $0[added.descriptor] = added.folder }
    }

    /// The root's folders one level down (a ladder's renditions).
    private func watchSubfolders(of root: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        for name in names where !name.hasPrefix(".") { watch(root + "/" + name) }
    }

    /// Reads every queued event (the descriptor is non-blocking) and notifies the board.
    private func drain(board: PublicationBoard, root: String) {
        // Room for many events at once; each is a header plus a name padded to alignment.
        let capacity = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: MemoryLayout<inotify_event>.alignment)
        defer { buffer.deallocate() }
        while true {
            let count = read(descriptor, buffer, capacity)
            guard count > 0 else { return }  // EAGAIN: drained (or the descriptor closed)
            var offset = 0
            // Safe: the kernel writes whole events, each `inotify_event` followed by `len` name bytes.
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                let nameStart = buffer.advanced(by: offset + MemoryLayout<inotify_event>.size)
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
                guard event.len > 0, let folder = folders.withLock({ $0[event.wd] }) else { continue }
                let name = String(cString: nameStart.assumingMemoryBound(to: CChar.self))
                let path = folder + "/" + name
                if event.mask & UInt32(IN_ISDIR) != 0 {
                    guard event.mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0, !name.hasPrefix(".") else { continue }
                    if path == root {
                        // The served folder itself, made after the start (watched from its parent).
                        watch(root)
                        watchSubfolders(of: root)
                    } else if folder == root {
                        // A rendition's folder made after the start: watch it too (one level only).
                        watch(path)
                    }
                    continue
                }
                if event.mask & UInt32(IN_MOVED_TO | IN_CLOSE_WRITE) != 0 { board.notify(canonical: path) }
            }
        }
    }
    #endif
}
