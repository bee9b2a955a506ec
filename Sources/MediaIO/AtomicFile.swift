import Broadcast
import CFFmpeg
import Foundation
import Synchronization

/// A file that appears under its name complete or not at all — the one atomic-file type of the
/// project: container files (FFmpeg's avio writes into `temporaryPath`), HLS segments, playlists and
/// init segments, master playlists, PNG frames, snapshots and the run report.
///
/// Bytes go to a hidden temporary name in the same folder (`.NAME.livefilter-PID-TOKEN.tmp`), created
/// with mode 0644 whatever the umask (a web server serves these files). `commit` renames it onto the
/// name (rename(2) is atomic within one file system), so a player polling the folder never reads a
/// half-written file; `discard`, or releasing an uncommitted file, removes it.
///
/// As an `OutputArtifact`: `init` checks the destination and creates nothing, `begin` creates the
/// temporary file, `write` appends, `commit` publishes, `discard` removes the temporary file.
public final class AtomicFile: OutputArtifact {
    /// Mode of every file livefilter writes.
    static let mode: mode_t = 0o644

    /// The final name.
    public let path: String
    /// Where the bytes go until `commit`.
    public let temporaryPath: String
    /// The name errors mention: `path`, or the output this file is part of (a segment's playlist,
    /// a frame's pattern), which is the name the user gave.
    public let displayPath: String
    /// Whether `commit` may replace an existing file; without it a name that appeared meanwhile is
    /// left alone (link(2) refuses it) and `commit` throws `outputExists`.
    public let overwrite: Bool
    /// Bytes written through `write` (not what FFmpeg writes by name).
    public private(set) var byteCount = 0

    private enum State { case created, writing, written, committed, discarded }
    private var state = State.created
    private var descriptor: Int32 = -1

    /// Checks the destination (`checkDestination`) and picks the temporary name. Creates nothing.
    public convenience init(path: String, overwrite: Bool) throws(MediaError) {
        try Self.checkDestination(path, overwrite: overwrite)
        self.init(unchecked: path, overwrite: overwrite, displayPath: path)
    }

    /// A file of an output whose destination was checked when the output began (the next segment,
    /// frame or playlist version): no checks here, and a missing folder at `begin` was removed
    /// during the run.
    init(unchecked path: String, overwrite: Bool = true, displayPath: String) {
        let url = URL(fileURLWithPath: path)
        self.path = path
        self.overwrite = overwrite
        self.displayPath = displayPath
        let token = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        temporaryPath = url.deletingLastPathComponent().appendingPathComponent(
            ".\(url.lastPathComponent).livefilter-\(getpid())-\(token).tmp").path
    }

    deinit { discard() }

    /// Output path checks, made before any file is created: the folder exists and is writable, and
    /// `path` is not a folder, nor an existing file unless `overwrite`.
    public static func checkDestination(_ path: String, overwrite: Bool) throws(MediaError) {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .outputFolderMissing(folder)
        }
        guard access(folder, W_OK | X_OK) == 0 else {
            throw .outputNotWritable(path, reason: "folder '\(folder)' is not writable")
        }
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            if isDirectory.boolValue { throw .outputNotWritable(path, reason: "it is a directory") }
            if !overwrite { throw .outputExists(path) }
        }
    }

    /// Creates the temporary file (never an existing one: O_EXCL).
    public func begin() throws(MediaError) {
        guard state == .created else { return }
        let fd = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, Self.mode)
        guard fd >= 0 else { throw failure(errno) }
        // open(2) applies the umask; published files must be world-readable for the web server.
        _ = fchmod(fd, Self.mode)
        descriptor = fd
        state = .writing
        Self.unfinished.withLock { _ = $0.insert(temporaryPath) }
    }

    /// Appends bytes; returns errno (0 on success) so a C callback can report it.
    func append(_ base: UnsafeRawPointer, count: Int) -> Int32 {
        guard state == .writing else { return EBADF }
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

    /// Appends `bytes` to the temporary file (after `begin`).
    public func write(_ bytes: [UInt8]) throws(MediaError) {
        let code = bytes.withUnsafeBytes { append($0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, count: $0.count) }
        if code != 0 { throw failure(code) }
    }

    func write(from base: UnsafeRawPointer, count: Int) throws(MediaError) {
        let code = append(base, count: count)
        if code != 0 { throw failure(code) }
    }

    /// Closes the temporary file: nothing more is written, `commit` only renames it. For files that
    /// wait for a later commit (a sequence's frames) and for files FFmpeg writes by name.
    func close() throws(MediaError) {
        guard state == .writing else { return }
        let code = Glibc.close(descriptor) == 0 ? 0 : errno
        descriptor = -1
        state = .written
        // Some file systems report a full disk only here.
        if code != 0 { throw failure(code) }
    }

    /// Closes the temporary file and renames it onto `path`. On failure the temporary file is removed.
    public func commit() throws(MediaError) {
        switch state {
        case .committed: return
        case .created, .discarded: throw .outputNotWritable(displayPath, reason: "nothing was written (commit without begin)")
        case .writing, .written: break
        }
        do throws(MediaError) {
            try close()
        } catch {
            discard()
            throw error
        }
        if overwrite {
            if rename(temporaryPath, path) != 0 {
                let code = errno
                discard()
                throw failure(code)
            }
        } else {
            // link(2) fails if the name appeared meanwhile: never clobber what we were not asked to.
            if link(temporaryPath, path) != 0 {
                let code = errno
                discard()
                throw code == EEXIST ? .outputExists(path) : failure(code)
            }
            unlink(temporaryPath)
        }
        state = .committed
        Self.unfinished.withLock { _ = $0.remove(temporaryPath) }
    }

    /// Closes and removes the temporary file. Idempotent; a no-op after `commit`; never throws.
    public func discard() {
        switch state {
        case .writing:
            Glibc.close(descriptor)
            descriptor = -1
            fallthrough
        case .written:
            unlink(temporaryPath)
            Self.unfinished.withLock { _ = $0.remove(temporaryPath) }
        case .created, .committed, .discarded:
            break
        }
        if state != .committed { state = .discarded }
    }

    /// Removes the published file again: for a batch of files that could not be published whole
    /// (`AtomicFileBatch`). A no-op unless this file was committed.
    func unpublish() {
        guard state == .committed else { return }
        unlink(path)
        state = .discarded
    }

    /// Whether `commit` has published the file.
    public var isCommitted: Bool { state == .committed }

    /// The error for a failed write, close, open or rename (errno `code`).
    func failure(_ code: Int32) -> MediaError {
        Self.writeError(errno: code, path: displayPath)
    }

    /// The error for a failed write of `path`'s bytes: `ioFailure`, else "cannot write output".
    static func writeError(errno code: Int32, path: String) -> MediaError {
        ioFailure(errno: code, path: path) ?? .outputNotWritable(path, reason: String(cString: strerror(code)))
    }

    /// The errors every writer tells apart: a full disk (or a file over its size limit), and the
    /// output folder removed mid-run (writing creates nothing but our own files, so a missing one
    /// means its folder went away). Nil for other codes.
    static func ioFailure(errno code: Int32, path: String) -> MediaError? {
        if code == ENOSPC || code == EFBIG || code == EDQUOT { return .diskFull(path) }
        if code == ENOENT { return .outputNotWritable(path, reason: "the output folder was removed during the run") }
        return nil
    }

    // MARK: - Leaving at once

    /// Temporary files begun and neither committed nor discarded, in this process.
    private static let unfinished = Mutex<Set<String>>([])

    /// Removes the temporary file of every `AtomicFile` in this process that is neither committed
    /// nor discarded. For a process about to exit without unwinding (a second Ctrl-C): nothing
    /// half-written stays behind; published files stay. Safe from any thread.
    public static func removeUnfinishedTemporaries() {
        let paths = unfinished.withLock { paths in
            defer { paths.removeAll() }
            return paths
        }
        for path in paths { unlink(path) }
    }

    /// Writes `bytes` to `path` in one go (begin, write, commit): the playlists.
    public static func write(_ bytes: [UInt8], to path: String, displayPath: String) throws(MediaError) {
        let file = AtomicFile(unchecked: path, displayPath: displayPath)
        try file.begin()
        try file.write(bytes)
        try file.commit()
    }
}

/// Files published together, in order: each is written to its temporary name first; `commit`
/// renames them all; `discard` removes the temporary files and any file of the batch `commit`
/// already published, so an interrupted publication leaves none of them. The owner calls `discard`
/// only while its output as a whole is unfinished (a PNG sequence's frames, a VOD rendition's
/// segments, whose playlist is published after them).
final class AtomicFileBatch {
    private(set) var files: [AtomicFile] = []

    /// Adds a file whose bytes are written; its descriptor is closed, so a long batch holds none.
    func add(_ file: AtomicFile) throws(MediaError) {
        files.append(file)
        try file.close()
    }

    func commit() throws(MediaError) {
        for file in files { try file.commit() }
    }

    func discard() {
        for file in files {
            file.discard()
            file.unpublish()
        }
    }
}

/// Where a muxer's custom AVIOContext sends bytes: into the current segment file, or into memory
/// when no file is open (the fMP4 init segment, or PAT/PMT before the first segment opens).
/// Handed to C as an `Unmanaged` opaque pointer; the muxer that owns the AVIOContext keeps it alive.
final class SegmentByteSink {
    private(set) var file: AtomicFile?
    private(set) var pending: [UInt8] = []
    /// errno of the first failed write; the muxer only sees a negative return code.
    private(set) var failure: Int32 = 0
    /// LL-HLS: the bytes of the open part, also kept in memory (nil: parts are not written). A part
    /// is at most a second of one rendition, so the copy is small; the segment file gets every byte too.
    private var part: [UInt8]?

    /// MPEG-TS that carries ad markers: every byte passes through it, so each PMT declares the
    /// SCTE-35 PID and a queued section goes in front of its splice's keyframe. Set before the
    /// first byte (the header's PAT/PMT).
    var rewriter: TransportStreamRewriter?
    private var rewriteFailure: TransportStreamError?

    init(keepsParts: Bool = false) {
        part = keepsParts ? [] : nil
    }

    func receive(_ buffer: UnsafePointer<UInt8>, count: Int) -> Int32 {
        guard rewriter != nil else { return store(buffer, count: count) }
        let rewritten: [UInt8]
        do {
            rewritten = try rewriter!.rewrite(UnsafeRawBufferPointer(start: buffer, count: count))
        } catch {
            rewriteFailure = error
            if failure == 0 { failure = EINVAL }
            return lf_averror(EINVAL)
        }
        guard !rewritten.isEmpty else { return Int32(count) }
        // The muxer is told its own count: what it wrote went out, with our packets beside it.
        let code = rewritten.withUnsafeBufferPointer { store($0.baseAddress!, count: $0.count) }
        return code < 0 ? code : Int32(count)
    }

    private func store(_ buffer: UnsafePointer<UInt8>, count: Int) -> Int32 {
        if let file {
            let code = file.append(UnsafeRawPointer(buffer), count: count)
            if code != 0 {
                if failure == 0 { failure = code }
                return lf_averror(code)
            }
            part?.append(contentsOf: UnsafeBufferPointer(start: buffer, count: count))
        } else {
            pending.append(contentsOf: UnsafeBufferPointer(start: buffer, count: count))
        }
        return Int32(count)
    }

    /// Starts filling `file` (begun); bytes held in memory go first.
    func begin(_ file: AtomicFile) throws(MediaError) {
        self.file = file
        let held = pending
        pending = []
        try file.write(held)
        part?.append(contentsOf: held)
    }

    /// The open part's bytes since the last call (empty without parts).
    func takePart() -> [UInt8] {
        defer { if part != nil { part = [] } }
        return part ?? []
    }

    /// Stops writing to the current file and hands it back for commit.
    func end() -> AtomicFile? {
        defer { file = nil }
        return file
    }

    func takePending() -> [UInt8] {
        defer { pending = [] }
        return pending
    }

    /// The error for a failed write, naming `path` (the output the bytes belong to), or nil.
    func error(naming path: String) -> MediaError? {
        if let rewriteFailure {
            return .unsupportedOutput(path, reason: "the SCTE-35 PID could not be added to the MPEG-TS (\(rewriteFailure)); use --ad-markers none or fMP4 segments")
        }
        return failure == 0 ? nil : AtomicFile.writeError(errno: failure, path: path)
    }
}

extension Packet {
    /// The packet's bytes (copied).
    var bytes: [UInt8] {
        guard let data = pointer.pointee.data, pointer.pointee.size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(pointer.pointee.size)))
    }
}
