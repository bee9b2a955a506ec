import Foundation
import Testing

/// Full-range 4:2:0 input (yuvj420p, as some cameras and phones record) runs on the planes: a first
/// pass writes it as limited range, the chain follows, and the output is limited-range yuv420p
/// tagged "tv" — the picture the RGB path gives (`--exact-rgb`), every frame ≥ 45 dB by ffmpeg's
/// psnr (the RGB path's own round trip through 8-bit RGB is what the two differ by).
@Suite struct FullRangeTests {
    @Test(arguments: ["rotate 90", "blur sigma=2 | scale fit=320x180", ""])
    func fullRangeInputRunsOnThePlanes(_ chain: String) async throws {
        let sandbox = try Sandbox("full-range")
        defer { sandbox.remove() }
        let clip = sandbox.file("in.mp4")
        try await ffmpeg(["-i", Sample.landscape.url.path, "-t", "2", "-an", "-vf", "scale=out_range=pc,format=yuvj420p",
                          "-c:v", "libx264", "-crf", "12", clip.path])
        let source = try #require(try await FFprobe.probe(clip).video)
        try #require(source.pixFmt == "yuvj420p" && source.colorRange == "pc", "ffmpeg made \(source.pixFmt ?? "?") \(source.colorRange ?? "?")")

        let planar = sandbox.file("planar.mp4"), rgb = sandbox.file("rgb.mp4"), report = sandbox.file("report.json")
        // Lossless x264, so the two outputs differ by their paths alone.
        let encode = ["--crf", "0", "--encoder-preset", "ultrafast", "-q"]
        try LiveFilter.requireSuccess(try await LiveFilter.run(["run", clip.path, "-o", planar.path, "--chain", chain, "--report", report.path] + encode))
        try LiveFilter.requireSuccess(try await LiveFilter.run(["run", clip.path, "-o", rgb.path, "--chain", chain, "--exact-rgb"] + encode))

        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any])
        let path = json["video_path"] as? String ?? "none"
        #expect(path.contains("YUV planes"), "\(chain): \(path)")
        let passes = (json["filter_milliseconds"] as? [String: Any]).map { Array($0.keys) } ?? []
        #expect(passes.contains("range"), "\(chain): passes \(passes)")
        for output in [planar, rgb] {
            let video = try #require(try await FFprobe.probe(output).video)
            #expect(video.pixFmt == "yuv420p" && video.colorRange == "tv", "\(chain): \(output.lastPathComponent) is \(video.pixFmt ?? "?") \(video.colorRange ?? "?")")
        }

        let stats = sandbox.file("psnr.log")
        try await ffmpeg(["-i", rgb.path, "-i", planar.path, "-lavfi", "[0:v][1:v]psnr=stats_file=\(stats.path)", "-f", "null", "-"])
        let values = try String(contentsOf: stats, encoding: .utf8).split(separator: "\n").compactMap { line -> Double? in
            guard let field = line.split(separator: " ").first(where: { $0.hasPrefix("psnr_avg:") }) else { return nil }
            let value = field.dropFirst("psnr_avg:".count)
            return value == "inf" ? .infinity : Double(value)
        }
        #expect(values.count == 60, "\(chain): psnr compared \(values.count) frames")
        #expect((values.min() ?? 0) >= 45, "\(chain): worst frame \(values.min() ?? 0) dB against --exact-rgb")
    }
}
