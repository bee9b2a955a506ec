import Foundation
import MediaIO

/// An output path that never holds a half-written file: work goes to a hidden temporary name in
/// the same folder, which is renamed onto the real name only when the output is complete.
final class AtomicOutput {
    let finalPath: String
    let temporaryPath: String
    let overwrite: Bool
    private var committed = false

    /// Checks the folder and the name, and picks the temporary name. Creates nothing yet.
    init(path: String, overwrite: Bool, temporaryExtension: String) throws(MediaError) {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) else {
            throw .outputFolderMissing(folder)
        }
        guard isDirectory.boolValue else { throw .outputFolderMissing(folder) }
        guard access(folder, W_OK | X_OK) == 0 else {
            throw .outputNotWritable(path, reason: "folder '\(folder)' is not writable")
        }
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            if isDirectory.boolValue { throw .outputNotWritable(path, reason: "it is a directory") }
            if !overwrite { throw .outputExists(path) }
        }
        finalPath = path
        self.overwrite = overwrite
        let token = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        temporaryPath = (folder as NSString).appendingPathComponent(
            ".\(url.lastPathComponent).livefilter-\(getpid())-\(token).\(temporaryExtension)")
        // Claim the temporary name now, so an unwritable place fails before any work, naming the real path.
        let fd = open(temporaryPath, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .outputNotWritable(path, reason: String(cString: strerror(errno))) }
        close(fd)
    }

    /// Moves the finished temporary file onto the final name.
    func commit() throws(MediaError) {
        if overwrite {
            if rename(temporaryPath, finalPath) != 0 {
                let reason = String(cString: strerror(errno))
                discard()
                throw .outputNotWritable(finalPath, reason: reason)
            }
        } else {
            // link() fails if the name appeared meanwhile: never clobber what we were not asked to.
            if link(temporaryPath, finalPath) != 0 {
                let code = errno
                discard()
                if code == EEXIST { throw .outputExists(finalPath) }
                throw .outputNotWritable(finalPath, reason: String(cString: strerror(code)))
            }
            unlink(temporaryPath)
        }
        committed = true
    }

    /// Removes the temporary file.
    func discard() {
        unlink(temporaryPath)
    }

    deinit {
        if !committed { discard() }
    }
}

/// An image sequence (`frames/%05d.png`) written into a hidden folder and moved into place at the end.
final class AtomicImageSequence {
    let pattern: String
    let folder: String
    let temporaryFolder: String
    let overwrite: Bool
    private var committed = false

    init(pattern: String, overwrite: Bool) throws(MediaError) {
        guard let name = pattern.split(separator: "/").last, !name.contains("..") else {
            throw .unsupportedOutput(pattern, reason: "not a file pattern")
        }
        // The name reaches String(format:) and FFmpeg's image2 muxer: one frame counter and nothing
        // else (a '%s' or '%n' used to crash the process), and no '%' in the folder part.
        guard Self.frameCounters(in: name) == 1, !pattern.dropLast(name.count).contains("%") else {
            throw .unsupportedOutput(pattern, reason: "a PNG pattern needs exactly one %d or %0Nd in its file name and no other '%'")
        }
        self.pattern = pattern
        self.overwrite = overwrite
        let url = URL(fileURLWithPath: pattern)
        folder = url.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .outputFolderMissing(folder)
        }
        guard access(folder, W_OK | X_OK) == 0 else {
            throw .outputNotWritable(pattern, reason: "folder '\(folder)' is not writable")
        }
        // The first file of the sequence already there means an earlier run: ask before replacing.
        let first = String(format: url.lastPathComponent, 1)
        if !overwrite, FileManager.default.fileExists(atPath: (folder as NSString).appendingPathComponent(first)) {
            throw .outputExists((folder as NSString).appendingPathComponent(first))
        }
        let token = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        temporaryFolder = (folder as NSString).appendingPathComponent(".livefilter-\(getpid())-\(token)")
    }

    /// The number of `%d`/`%0Nd` (N up to two digits) in `name`, or nil if it holds any other `%`
    /// directive; `%%` is a literal percent sign.
    static func frameCounters(in name: Substring) -> Int? {
        let chars = Array(name)
        var count = 0
        var i = 0
        while i < chars.count {
            defer { i += 1 }
            guard chars[i] == "%" else { continue }
            i += 1
            if i < chars.count, chars[i] == "%" { continue }
            var digits = 0
            while i < chars.count, chars[i].isASCII, chars[i].isNumber { digits += 1; i += 1 }
            guard digits <= 2, i < chars.count, chars[i] == "d" else { return nil }
            count += 1
        }
        return count
    }

    var temporaryPattern: String {
        (temporaryFolder as NSString).appendingPathComponent(URL(fileURLWithPath: pattern).lastPathComponent)
    }

    func create() throws(MediaError) {
        do {
            try FileManager.default.createDirectory(atPath: temporaryFolder, withIntermediateDirectories: false)
        } catch {
            throw .outputNotWritable(pattern, reason: "cannot create a temporary folder: \(error.localizedDescription)")
        }
    }

    func commit() throws(MediaError) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporaryFolder)) ?? []
        for name in names.sorted() {
            let from = (temporaryFolder as NSString).appendingPathComponent(name)
            let to = (folder as NSString).appendingPathComponent(name)
            if overwrite { unlink(to) }
            if rename(from, to) != 0 {
                throw .outputNotWritable(to, reason: String(cString: strerror(errno)))
            }
        }
        committed = true
        discard()
    }

    func discard() {
        try? FileManager.default.removeItem(atPath: temporaryFolder)
    }

    deinit {
        if !committed { discard() }
    }
}
