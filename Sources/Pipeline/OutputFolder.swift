import Foundation
import MediaIO

/// The output's folder, made when missing (`run` and `join` from the CLI; the library leaves it to the app).
public enum OutputFolder {
    /// Makes the missing folders of an output path, returning those it made, outermost first.
    /// Not through `..` (an output name must not reach outside the folder it names) and not a
    /// folder named with '%' (a PNG pattern's counter belongs in the file name).
    public static func make(of output: String) throws(MediaError) -> [String] {
        // Those are left to the writers' own checks, which refuse them as they always did.
        let components = output.split(separator: "/")
        guard !components.contains(".."), !components.dropLast().contains(where: { $0.contains("%") }) else { return [] }
        let folder = URL(fileURLWithPath: output).deletingLastPathComponent().standardizedFileURL
        var missing: [URL] = []
        var probe = folder
        while !FileManager.default.fileExists(atPath: probe.path), probe.pathComponents.count > 1 {
            missing.append(probe)
            probe = probe.deletingLastPathComponent()
        }
        guard !missing.isEmpty else { return [] }
        var made: [String] = []
        for url in missing.reversed() {
            if mkdir(url.path, 0o755) != 0, errno != EEXIST {
                for m in made.reversed() { rmdir(m) }
                throw .outputNotWritable(output, reason: "cannot create the folder '\(url.path)': \(String(cString: strerror(errno)))")
            }
            made.append(url.path)
        }
        return made
    }
}
