import Foundation
import Testing

extension EndToEnd.HLSInputTests {
    /// EXT-X-PROGRAM-DATE-TIME carried through: each output segment is dated by the source's clock
    /// of the picture it starts with, across a discontinuity whose second clip has its own date.
    @Test("HLS input: the source's EXT-X-PROGRAM-DATE-TIME dates the output's segments")
    func programDateTimeCarriedThrough() async throws {
        let sandbox = try Sandbox("hls-in")
        defer { sandbox.remove() }
        let media = sandbox.file("site/media")
        try await SyntheticHLS.make(SyntheticHLS.Clip(seconds: 4), in: media, name: "a")
        try await SyntheticHLS.make(SyntheticHLS.Clip(seconds: 4, pattern: "smptebars", tone: 880, offset: 50), in: media, name: "b")
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let first = formatter.date(from: "2024-05-06T07:08:09.000Z")!, second = formatter.date(from: "2024-05-06T09:00:00.500Z")!
        let body = ["#EXT-X-PROGRAM-DATE-TIME:2024-05-06T07:08:09.000Z"] + SyntheticHLS.entries(Self.segmentNames(4, name: "a"))
            + ["#EXT-X-DISCONTINUITY", "#EXT-X-PROGRAM-DATE-TIME:2024-05-06T09:00:00.500Z"] + SyntheticHLS.entries(Self.segmentNames(4, name: "b"))
        try SyntheticHLS.playlist(body).write(to: media.appendingPathComponent("dated.m3u8"), atomically: true, encoding: .utf8)
        let server = try await FolderServer.start(sandbox.file("site"))
        defer { server.stop() }
        let output = sandbox.file("out/index.m3u8")
        let result = try await Self.run(server.url("/media/dated.m3u8"), to: output, ["--hls-time", "2", "--hls-playlist", "event"])
        try LiveFilter.requireSuccess(result)
        let text = try String(contentsOf: output, encoding: .utf8)
        let dates = text.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-PROGRAM-DATE-TIME:") }
            .map { formatter.date(from: String($0.dropFirst("#EXT-X-PROGRAM-DATE-TIME:".count))) }
        // Output segment k starts at 2k s: the first clip's clock for k = 0, 1; the second's after.
        #expect(dates.count == 4, "\(text)")
        for (k, parsed) in dates.enumerated() {
            let expected = k < 2 ? first.addingTimeInterval(Double(2 * k)) : second.addingTimeInterval(Double(2 * k - 4))
            let date = try #require(parsed, "segment \(k)'s EXT-X-PROGRAM-DATE-TIME does not parse")
            #expect(abs(date.timeIntervalSince(expected)) <= 0.034, "segment \(k): \(formatter.string(from: date)), expected \(formatter.string(from: expected))")
        }
    }
}
