// The README's library example, compiled and run by `LibraryAPITests`. Keep the text between the
// markers identical to the README's block (a test compares them).
// example:begin
import LiveFilter

/// Blurs, turns, mirrors and fits a clip into 1280×720 at 2 Mb/s, printing progress.
func shrinkForSharing(_ input: String, to output: String) async throws -> JobSummary {
    var job = JobConfiguration(input: input, output: output, chain: FilterChain([
        GaussianBlur(sigma: 6), Rotate(.clockwise), Mirror(.horizontal), Scale(fit: .init(1280, 720)),
    ]))
    job.video.rateControl = .averageBitrate(2_000_000)
    job.audio = .aac(AACSettings(bitRate: 128_000))
    let session = ExportSession(job, onCancel: .removeOutput)
    let watcher = Task {
        for await p in session.progress { print("\(Int(p.fraction * 100))%") }
    }
    defer { watcher.cancel() }
    return try await session.run()
}
// example:end
