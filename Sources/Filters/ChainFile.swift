#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file the chain reads — an overlay's PNG, a text's font, a track — as the chain's file access
/// (`ChainFileAccess`) admitted it. Every read of a file the grammar names goes through `open`.
public struct ChainFile: Sendable, Hashable, CustomStringConvertible {
    /// The path as the chain's text writes it and as it is opened; for a file admitted within a
    /// folder, its real path (no `..`, no symbolic link), so the text reads the same file anywhere.
    public let path: String
    /// For a file admitted within a folder, that folder's real path. Such a file is opened without
    /// following a link in its last component, and the opened file's real path must still be
    /// `path`: a name swapped for a link after the check leads nowhere.
    let folder: String?
    /// The path as the text wrote it, for messages: an error about a file in the folder says what
    /// the client wrote, not where the folder is.
    let spelled: String

    /// A file the operator names (the run's own chain, an app's code): read wherever it is.
    public init(path: String) {
        (self.path, folder, spelled) = (path, nil, path)
    }

    init(realPath: String, folder: String, spelled: String) {
        (path, self.folder, self.spelled) = (realPath, folder, spelled)
    }

    public var description: String { path }
    public static func == (a: ChainFile, b: ChainFile) -> Bool { a.path == b.path && a.folder == b.folder }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(path)
        hasher.combine(folder)
    }

    /// Why a file cannot be read, in words that follow its path in a message.
    struct ReadError: Error {
        let reason: String
    }

    /// Opens a regular file of at most `largest` bytes. A device, a FIFO or a folder is refused
    /// before it is opened (opening one can hang a run or have effects), and checked again on the
    /// open descriptor, so a name swapped meanwhile is refused too.
    func open(largest: Int) throws(ReadError) -> OpenedFile {
        var before = stat()
        // A confined file's last component must not be a link; the operator's files may be links.
        guard (folder == nil ? stat(path, &before) : lstat(path, &before)) == 0 else { throw Self.failure(errno) }
        try Self.checkRegular(before, largest: largest)
        var flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK
        if folder != nil { flags |= O_NOFOLLOW }
        let descriptor = openFile(path, flags)
        guard descriptor >= 0 else { throw Self.failure(errno) }
        var file = OpenedFile(descriptor: descriptor)
        guard fstat(descriptor, &file.info) == 0 else { throw Self.failure(errno) }
        try Self.checkRegular(file.info, largest: largest)
        guard file.info.st_dev == before.st_dev, file.info.st_ino == before.st_ino else { throw ReadError(reason: "changed while being opened") }
        if folder != nil, file.realPath() != path { throw ReadError(reason: "changed while being opened") }
        return file
    }

    private static func checkRegular(_ info: stat, largest: Int) throws(ReadError) {
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw ReadError(reason: "not a regular file") }
        guard Int(info.st_size) <= largest else { throw ReadError(reason: "larger than \(largest >> 20) MB") }
    }

    private static func failure(_ code: Int32) -> ReadError {
        ReadError(reason: code == ENOENT || code == ENOTDIR ? "no such file" : code == ELOOP ? "a symbolic link" : "cannot read it (errno \(code))")
    }
}

/// `open(2)` under a name the struct's own `open` does not hide.
private func openFile(_ path: String, _ flags: Int32) -> Int32 {
    open(path, flags)
}

/// An open file descriptor, with its `fstat`; its one owner closes it.
struct OpenedFile: ~Copyable {
    let descriptor: Int32
    fileprivate(set) var info = stat()

    fileprivate init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// What a cache compares to know the file is the one it read: device, inode, size, mtime.
    var stamp: [Int] {
        [Int(info.st_dev), Int(info.st_ino), Int(info.st_size), info.st_mtim.tv_sec, info.st_mtim.tv_nsec]
    }

    /// The whole file as it was opened (a file that shrinks meanwhile gives what is left).
    func bytes() throws(ChainFile.ReadError) -> [UInt8] {
        let size = Int(info.st_size)
        var out = [UInt8](repeating: 0, count: size)
        var done = 0
        while done < size {
            // The buffer holds `size` bytes and `done < size`: the range written stays inside it.
            let count = out.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + done, size - done) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw ChainFile.ReadError(reason: "cannot read it (errno \(errno))") }
            if count == 0 { break }
            done += count
        }
        out.removeLast(size - done)
        return out
    }

    /// Where the open file is now, by the kernel's account; nil when it cannot say.
    func realPath() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        #if os(Linux)
        let count = readlink("/proc/self/fd/\(descriptor)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #else
        guard fcntl(descriptor, F_GETPATH, &buffer) != -1 else { return nil }
        return String(cString: buffer)
        #endif
    }
}
