import Foundation
import LiveFilter
import Testing

/// The library API as an embedding app uses it: one call per job, progress as an AsyncSequence,
/// cancellation by cancelling the task, typed errors, and filters of the caller's own.
@Suite(.serialized)
struct LibraryAPITests {
    static let root: URL = {
        var dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("Package.swift").path) { dir.deleteLastPathComponent() }
        return dir
    }()
    static let landscape = root.appendingPathComponent("samples/landscape.mp4").path

    static func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("livefilter-api-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A 1080p30 clip of `seconds` made by the ffmpeg CLI (an independent tool).
    static func make1080p(seconds: Int, in folder: URL) throws -> String {
        let path = folder.appendingPathComponent("hd.mp4").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        p.arguments = ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30", "-f", "lavfi", "-i", "sine",
                       "-t", String(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-shortest", path]
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
        return path
    }

    @Test func readmeExampleIsTheCompiledOneAndRuns() async throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: Self.root.appendingPathComponent("Tests/PipelineTests/ReadmeExample.swift"), encoding: .utf8)
        func block(_ text: String, from begin: String, to end: String) -> String? {
            guard let a = text.range(of: begin), let b = text.range(of: end, range: a.upperBound..<text.endIndex) else { return nil }
            return text[a.upperBound..<b.lowerBound].split(separator: "\n", omittingEmptySubsequences: true)
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("```") }.joined(separator: "\n")
        }
        let inReadme = try #require(block(readme, from: "<!-- example:begin -->", to: "<!-- example:end -->"))
        let inSource = try #require(block(source, from: "// example:begin", to: "// example:end"))
        #expect(inReadme == inSource, "README's example and Tests/PipelineTests/ReadmeExample.swift differ")

        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent("shared.mp4").path
        let summary = try await shrinkForSharing(Self.landscape, to: output)
        #expect(summary.framesWritten == 150)
        #expect(summary.outputSize == FrameSize(404, 720), "640x360 turned to 360x640, fitted into 1280x720 on even sizes")
        let check = try Demuxer(url: output)
        #expect(check.video.size == summary.outputSize)
        #expect(check.audio?.isAAC == true)
    }

    @Test func progressIsMonotonicAndEndsAtOne() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let job = JobConfiguration(input: Self.landscape, output: folder.appendingPathComponent("p.mp4").path,
                                   chain: FilterChain([GaussianBlur(sigma: 3)]))
        let session = ExportSession(job)
        let collector = Task { () -> [ExportSession.Progress] in
            var all: [ExportSession.Progress] = []
            for await p in session.progress { all.append(p) }
            return all
        }
        _ = try await session.run()
        let events = await collector.value
        #expect(!events.isEmpty)
        for (a, b) in zip(events, events.dropFirst()) {
            #expect(b.fraction >= a.fraction && b.videoFraction >= a.videoFraction)
            #expect((b.audioFraction ?? 0) >= (a.audioFraction ?? 0))
        }
        #expect(events.last?.fraction == 1.0)
        #expect(events.last?.videoFraction == 1.0)
        #expect(events.dropLast().allSatisfy { $0.fraction < 1.0 })
    }

    @Test(arguments: [ExportSession.CancellationBehavior.removeOutput, .finishPartialOutput])
    func cancellationIsPromptAndLeavesWhatWasAsked(_ behavior: ExportSession.CancellationBehavior) async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = try Self.make1080p(seconds: 20, in: folder)
        let output = folder.appendingPathComponent("out.mp4").path
        var job = JobConfiguration(input: input, output: output, chain: FilterChain([GaussianBlur(sigma: 6), Mirror(.horizontal)]))
        job.video.speedPreset = .medium
        let session = ExportSession(job, onCancel: behavior)
        let task = Task { try await session.run() }
        try await Task.sleep(for: .seconds(2))
        let cancelled = ContinuousClock.now
        task.cancel()
        var outcome = "completed"
        do {
            let summary = try await task.value
            if summary.interrupted { outcome = "finished early" }
        } catch let error as ExportError where error.kind == .cancelled {
            outcome = "cancelled"
        } catch {
            outcome = "failed: \(error)"
        }
        let elapsed = ContinuousClock.now - cancelled
        // Removing the output is a cancellation error; finishing it gives the summary of what was done.
        #expect(outcome == (behavior == .removeOutput ? "cancelled" : "finished early"))
        #expect(elapsed < .milliseconds(500), "stopped \(elapsed) after cancel")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty, "temporary files left: \(leftovers)")
        switch behavior {
        case .removeOutput:
            #expect(!FileManager.default.fileExists(atPath: output))
        case .finishPartialOutput, .finishOutput:
            let partial = try Demuxer(url: output)
            #expect(partial.video.size == FrameSize(1920, 1080))
            #expect((partial.duration ?? 0) > 0.1)
        }
    }

    /// A caller's own filter: inverts every channel.
    struct Invert: Filter {
        var description: String { "invert" }
        func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize { input }
        func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer { Renderer(inputSize: input) }

        final class Renderer: FilterRenderer {
            let inputSize: FrameSize
            var outputSize: FrameSize { inputSize }
            init(inputSize: FrameSize) { self.inputSize = inputSize }
            func render(_ source: RGBImage, into destination: RGBImage) {
                for y in 0..<source.height {
                    let s = source.row(y), d = destination.row(y)
                    for i in 0..<source.width * 3 { d[i] = 255 &- s[i] }
                }
            }
        }
    }

    @Test func callerDefinedFilterRunsThroughTheChain() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent("inverted.mp4").path
        var job = JobConfiguration(input: Self.landscape, output: output, chain: FilterChain([Invert()]))
        job.video.rateControl = .crf(12)
        _ = try await ExportSession(job).run()
        let before = try Snapshotter(input: Self.landscape, chain: FilterChain()).frame(at: 1).after
        let after = try Snapshotter(input: output, chain: FilterChain()).frame(at: 1).after
        // Inverted: source + output ≈ 255 everywhere (allowing for compression).
        var error = 0.0
        let a = before.packedBytes(), b = after.packedBytes()
        for i in stride(from: 0, to: a.count, by: 7) { error += abs(Double(a[i]) + Double(b[i]) - 255) }
        let mean = error / Double(a.count / 7)
        #expect(mean < 6, "mean |src + out − 255| = \(mean)")
    }

    @Test func errorsAreTypedWithASuggestion() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        func kind(_ job: JobConfiguration) async -> ExportError.Kind? {
            do { _ = try await ExportSession(job).run(); return nil } catch let e as ExportError {
                #expect(!e.recoverySuggestion.isEmpty)
                return e.kind
            } catch { return nil }
        }
        #expect(await kind(JobConfiguration(input: "/nonexistent.mp4", output: folder.appendingPathComponent("a.mp4").path)) == .inputUnreadable)
        let existing = folder.appendingPathComponent("exists.mp4").path
        FileManager.default.createFile(atPath: existing, contents: Data("x".utf8))
        #expect(await kind(JobConfiguration(input: Self.landscape, output: existing)) == .outputExists)
        #expect(await kind(JobConfiguration(input: Self.landscape, output: "/nonexistent-dir/x.mp4")) == .outputNotWritable)
        #expect(await kind(JobConfiguration(input: Self.landscape, output: folder.appendingPathComponent("c.mp4").path,
                                            chain: FilterChain([Crop(width: 5000, height: 10)]))) == .badChain)
    }
}
