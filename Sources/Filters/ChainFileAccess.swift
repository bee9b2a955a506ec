#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which files a chain's text may make the program read (`overlay FILE`, `font=`, `track=`),
/// decided where the text is parsed: `FilterChain(parsing:files:)`, `FilterChain.applying(_:files:)`.
///
/// - `unrestricted`: any path, as written: the operator's own `--chain` and `--chain-file`, and
///   the library's default.
/// - `none`: no file; a text that names one is refused.
/// - `within(folder)`: only files in that folder: a relative path starts there, and the path is
///   resolved as `realpath` does (`..` and every symbolic link followed) and must stay inside. A
///   link that leads out, even one that would come back, is refused.
///
/// A path is judged before any file it names is touched: nothing outside the folder is opened or
/// even `stat`ed, so a refusal reads the same whether or not the file exists, and says nothing of
/// what it holds. A file admitted within a folder is named by its real path and opened without
/// following a link in its last component; the opened file must still be at that path.
public struct ChainFileAccess: Sendable, CustomStringConvertible {
    enum Scope: Sendable {
        case unrestricted
        case none
        case within(Folder)
    }

    /// The folder as its real path (components) and as given (absolute), so a path may start with either.
    struct Folder: Sendable {
        let real: [Substring]
        let given: [Substring]
        var realPath: String { "/" + real.joined(separator: "/") }
    }

    let scope: Scope
    /// Files a text may name although the scope would refuse them, by the path the running chain's
    /// text writes: those a chain already reads keep their meaning (`keeping(filesOf:)`).
    private(set) var kept: [String: ChainFile] = [:]

    public static let unrestricted = ChainFileAccess(scope: .unrestricted)
    public static let none = ChainFileAccess(scope: .none)

    /// Why a folder cannot be the one files are read from.
    public struct FolderError: Error, Sendable, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "\(path): \(reason)" }
    }

    /// Only files in `folder`, which must exist and be a folder now.
    public static func within(_ folder: String) throws(FolderError) -> ChainFileAccess {
        guard !folder.isEmpty, !folder.utf8.contains(0) else { throw FolderError(path: folder, reason: "not a folder name") }
        guard let real = realpath(folder, nil) else {
            let code = errno
            throw FolderError(path: folder, reason: code == ENOENT || code == ENOTDIR ? "no such folder" : "cannot read it (errno \(code))")
        }
        defer { free(real) }
        var info = stat()
        guard stat(real, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { throw FolderError(path: folder, reason: "not a folder") }
        var given = folder
        if !folder.hasPrefix("/"), let cwd = getcwd(nil, 0) {
            given = String(cString: cwd) + "/" + folder
            free(cwd)
        }
        return ChainFileAccess(scope: .within(Folder(real: components(String(cString: real)), given: components(given).filter { $0 != "." })))
    }

    /// These rules, and the files `chain` reads as it reads them: a text may name them again,
    /// written as the chain's text writes them (a change that keeps the run's own logo).
    public func keeping(filesOf chain: FilterChain) -> ChainFileAccess {
        var out = self
        for filter in chain.filters {
            for file in (filter as? any ReadsChainFiles)?.chainFiles ?? [] where out.kept[file.path] == nil {
                out.kept[file.path] = file
            }
        }
        return out
    }

    public var description: String {
        switch scope {
        case .unrestricted: "any file"
        case .none: "no file"
        case let .within(folder): "files in \(folder.realPath)"
        }
    }

    /// Whether a refusal would be for a path outside a folder (else: no file at all).
    var allowsFolder: Bool {
        if case .within = scope { return true } else { return false }
    }

    /// The file `spelled` names for `filter`'s `key`, or the refusal. Touches nothing outside the folder.
    func admit(_ spelled: String, filter: String, key: String) throws(ChainSyntaxError) -> ChainFile {
        if let file = kept[spelled] { return file }
        switch scope {
        case .unrestricted:
            return ChainFile(path: spelled)
        case .none:
            throw .fileNotAllowed(filter: filter, key: key, path: spelled, folder: false)
        case let .within(folder):
            switch Self.resolve(spelled, in: folder) {
            case let .inside(path): return ChainFile(realPath: path, folder: folder.realPath, spelled: spelled)
            case .outside: throw .fileNotAllowed(filter: filter, key: key, path: spelled, folder: true)
            case let .unreadable(reason): throw .badValue(filter: filter, key: key, value: spelled, expected: "a file it can read: \(reason)")
            }
        }
    }

    enum Resolution: Equatable {
        /// The real path (for a name that does not exist, the path up to it and the rest as written).
        case inside(String)
        case outside
        /// Inside, but it cannot be followed: why.
        case unreadable(String)
    }

    /// `spelled` resolved as `realpath` would, within `folder`: only names inside it are looked at
    /// (`lstat`, `readlink`); the first step out — `..` above it, a link to an absolute path not in
    /// it — is `outside`, decided without touching what lies there.
    static func resolve(_ spelled: String, in folder: Folder) -> Resolution {
        guard !spelled.isEmpty, !spelled.utf8.contains(0) else { return .outside }
        var rest = components(spelled)
        if spelled.hasPrefix("/") {
            guard let inside = remainder(rest, after: folder.real) ?? remainder(rest, after: folder.given) else { return .outside }
            rest = inside
        }
        // As written, the path never climbs above the folder: checked before anything is looked at.
        var depth = 0
        for name in rest where name != "." {
            depth += name == ".." ? -1 : 1
            guard depth >= 0 else { return .outside }
        }
        var resolved = folder.real
        var pending = Array(rest.reversed())
        var links = 0
        while let name = pending.popLast() {
            if name == "." { continue }
            if name == ".." {
                guard resolved.count > folder.real.count else { return .outside }
                resolved.removeLast()
                continue
            }
            let candidate = "/" + (resolved + [name]).joined(separator: "/")
            var info = stat()
            guard lstat(candidate, &info) == 0 else {
                let code = errno
                guard code == ENOENT || code == ENOTDIR else { return .unreadable("cannot read it (errno \(code))") }
                // Nothing more to follow: opening it fails as for any missing file.
                return .inside("/" + (resolved + [name] + pending.reversed()).joined(separator: "/"))
            }
            guard (info.st_mode & S_IFMT) == S_IFLNK else {
                resolved.append(name)
                continue
            }
            links += 1
            guard links <= 40, let target = readLink(candidate) else { return .unreadable(links > 40 ? "too many symbolic links" : "cannot read a link") }
            var parts = components(target)
            if target.hasPrefix("/") {
                guard let inside = remainder(parts, after: folder.real) else { return .outside }
                (resolved, parts) = (folder.real, inside)
            }
            pending += parts.reversed()
        }
        return .inside("/" + resolved.joined(separator: "/"))
    }

    static func components(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }

    /// What follows `prefix` in `parts` (dots dropped), or nil when `parts` does not start with it.
    private static func remainder(_ parts: [Substring], after prefix: [Substring]) -> [Substring]? {
        let plain = parts.filter { $0 != "." }
        guard plain.starts(with: prefix) else { return nil }
        return Array(plain.dropFirst(prefix.count))
    }

    private static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A filter that reads files named in its text: what `ChainFileAccess.keeping(filesOf:)` keeps.
protocol ReadsChainFiles {
    var chainFiles: [ChainFile] { get }
}
