import CFFmpeg
import Foundation

/// Files that appear complete or not at all: bytes go to `name.tmp` in the same folder, which is
/// renamed over `name` (rename(2) is atomic within one file system). A player polling the folder
/// never reads a half-written segment or playlist. Files get mode 0644 whatever the umask.
enum AtomicFile {
    static let mode: mode_t = 0o644

    static func temporaryPath(for path: String) -> String { path + ".tmp" }

    /// Whether a write's errno means the file system is full or the file hit its size limit.
    static func isDiskFull(_ code: Int32) -> Bool { code == ENOSPC || code == EFBIG || code == EDQUOT }

    /// Writes `bytes` to `path` atomically.
    static func write(_ bytes: some Collection<UInt8>, to path: String) throws(MediaError) {
        let file = try OpenFile(creating: temporaryPath(for: path))
        do throws(MediaError) {
            try file.append(Array(bytes))
            try file.commit(as: path)
        } catch {
            file.discard()
            throw error
        }
    }

    static func write(_ text: String, to path: String) throws(MediaError) {
        try write(Array(text.utf8), to: path)
    }
}

/// A temporary file being filled; `commit` renames it into place, `discard` removes it.
final class OpenFile {
    let temporaryPath: String
    private var descriptor: Int32
    private(set) var byteCount = 0

    init(creating temporaryPath: String) throws(MediaError) {
        self.temporaryPath = temporaryPath
        descriptor = open(temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, AtomicFile.mode)
        if descriptor < 0 { throw .outputNotWritable(temporaryPath, reason: String(cString: strerror(errno))) }
        // open(2) applies the umask; the published files must be world-readable for the web server.
        _ = fchmod(descriptor, AtomicFile.mode)
    }

    deinit { discard() }

    /// Appends bytes; returns errno (0 on success) so a C callback can report it.
    func append(_ base: UnsafeRawPointer, count: Int) -> Int32 {
        var done = 0
        while done < count {
            let n = Glibc.write(descriptor, base + done, count - done)
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += n
        }
        byteCount += count
        return 0
    }

    func append(_ bytes: [UInt8]) throws(MediaError) {
        let code = bytes.withUnsafeBytes { append($0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, count: $0.count) }
        if AtomicFile.isDiskFull(code) { throw .diskFull(temporaryPath.hasSuffix(".tmp") ? String(temporaryPath.dropLast(4)) : temporaryPath) }
        if code != 0 { throw .outputNotWritable(temporaryPath, reason: String(cString: strerror(code))) }
    }

    /// Closes the file and renames it to `path`.
    func commit(as path: String) throws(MediaError) {
        guard descriptor >= 0 else { throw .outputNotWritable(path, reason: "file already closed") }
        let closeCode = close(descriptor)
        descriptor = -1
        if closeCode != 0 { throw .outputNotWritable(path, reason: String(cString: strerror(errno))) }
        if rename(temporaryPath, path) != 0 {
            let reason = String(cString: strerror(errno))
            unlink(temporaryPath)
            throw .outputNotWritable(path, reason: reason)
        }
    }

    /// Closes and removes the temporary file (no-op after `commit`).
    func discard() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
        unlink(temporaryPath)
    }
}

/// Where a muxer's custom AVIOContext sends bytes: into the current segment file, or into memory
/// when no file is open (the fMP4 init segment, or PAT/PMT before the first segment opens).
/// Handed to C as an `Unmanaged` opaque pointer; the writer that owns the AVIOContext keeps it alive.
final class SegmentByteSink {
    private(set) var file: OpenFile?
    private(set) var pending: [UInt8] = []
    /// errno of the first failed write; the muxer only sees a negative return code.
    private(set) var failure: Int32 = 0

    func receive(_ buffer: UnsafePointer<UInt8>, count: Int) -> Int32 {
        if let file {
            let code = file.append(UnsafeRawPointer(buffer), count: count)
            if code != 0 {
                if failure == 0 { failure = code }
                return lf_averror(code)
            }
        } else {
            pending.append(contentsOf: UnsafeBufferPointer(start: buffer, count: count))
        }
        return Int32(count)
    }

    /// Starts filling `file`; bytes held in memory go first.
    func begin(_ file: OpenFile) throws(MediaError) {
        self.file = file
        let held = pending
        pending = []
        try file.append(held)
    }

    /// Stops writing to the current file and hands it back for commit.
    func end() -> OpenFile? {
        defer { file = nil }
        return file
    }

    func takePending() -> [UInt8] {
        defer { pending = [] }
        return pending
    }

    var failureText: String? { failure == 0 ? nil : String(cString: strerror(failure)) }
}

extension Packet {
    /// The packet's bytes (copied).
    var bytes: [UInt8] {
        guard let data = pointer.pointee.data, pointer.pointee.size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(pointer.pointee.size)))
    }
}
