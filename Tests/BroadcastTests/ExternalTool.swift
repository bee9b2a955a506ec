import Foundation
import Testing

/// The independent tools the Broadcast tests compare with: the ffmpeg CLI, ffprobe, and the Python
/// oracles in scripts/ (threefive, mutagen, pymp4: `LIVEFILTER_PLAYERS=1 scripts/install-deps.sh`).
enum ExternalTool {
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts")

    /// Runs `tool` (found on PATH) and returns its standard output; a failure is a test failure
    /// with the tool's standard error.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        // Standard error goes to a file, so neither stream can fill its pipe and stall the tool.
        let errorsFile = FileManager.default.temporaryDirectory.appendingPathComponent("livefilter-tool-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: errorsFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errorsFile) }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = try FileHandle(forWritingTo: errorsFile)
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let errors = (try? Data(contentsOf: errorsFile)) ?? Data()
        try #require(process.terminationStatus == 0,
                     "\(tool) \(arguments.joined(separator: " ")) failed: \(String(decoding: errors, as: UTF8.self).suffix(2000))")
        return data
    }

    /// A Python oracle in scripts/, its JSON answer decoded.
    static func oracle<T: Decodable>(_ script: String, _ arguments: [String], as type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: run("python3", [scripts.appendingPathComponent(script).path] + arguments))
    }

    /// A fresh folder under the temporary directory, removed by the caller.
    static func folder(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("livefilter-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
