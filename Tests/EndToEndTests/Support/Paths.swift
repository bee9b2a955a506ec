import Foundation

/// Where things are: the package root, the samples, the `livefilter` binary and the FFmpeg tools.
enum Paths {
    /// The package root: the nearest directory above this file that holds `Package.swift`.
    static let packageRoot: URL = {
        var dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while dir.path != "/" {
            if FileManager.default.fileExists(atPath: dir.appendingPathComponent("Package.swift").path) {
                return dir
            }
            dir.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
    }()

    static let samples = packageRoot.appendingPathComponent("samples")

    static func sample(_ name: String) -> URL { samples.appendingPathComponent(name) }

    /// The `livefilter` executable under test.
    ///
    /// `LIVEFILTER_BIN` wins. Otherwise walk up from the test bundle (`CommandLine.arguments[0]`,
    /// e.g. `.build/x86_64-unknown-linux-gnu/release/livefilterPackageTests.xctest`) to the first
    /// directory holding an executable *file* named `livefilter` — the build products directory.
    /// Last resort: `.build/release/livefilter` under the package root.
    static let livefilter: URL? = {
        let fm = FileManager.default
        if let env = ProcessInfo.processInfo.environment["LIVEFILTER_BIN"], !env.isEmpty {
            return URL(fileURLWithPath: env)
        }
        func executableFile(in dir: URL) -> URL? {
            let candidate = dir.appendingPathComponent("livefilter")
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue,
                  fm.isExecutableFile(atPath: candidate.path) else { return nil }
            return candidate
        }
        if let first = CommandLine.arguments.first, !first.isEmpty {
            var dir = URL(fileURLWithPath: first).standardizedFileURL.deletingLastPathComponent()
            while dir.path != "/" && !dir.path.isEmpty {
                if let found = executableFile(in: dir) { return found }
                dir.deleteLastPathComponent()
            }
        }
        return executableFile(in: packageRoot.appendingPathComponent(".build/release"))
    }()

    /// A tool on `PATH` (e.g. `ffmpeg`, `ffprobe`), falling back to `/usr/bin`.
    static func tool(_ name: String) -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(dir)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return URL(fileURLWithPath: "/usr/bin").appendingPathComponent(name)
    }

    static let ffmpeg = tool("ffmpeg")
    static let ffprobe = tool("ffprobe")
}

/// A fresh temporary directory for one test. Remove it with `defer { sandbox.remove() }` right after
/// creating it — not in a `deinit`: in optimised builds an object can be released right after its
/// last use, which would delete the directory while livefilter is still writing into it.
struct Sandbox: Sendable {
    let url: URL

    init(_ label: String = "e2e") throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("livefilter-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Names of the entries in the sandbox (or a subdirectory), sorted.
    func contents(of sub: String? = nil) throws -> [String] {
        let dir = sub.map { url.appendingPathComponent($0) } ?? url
        return try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
    }

    func remove() { try? FileManager.default.removeItem(at: url) }
}
