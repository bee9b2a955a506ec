import Foundation
import Testing

extension EndToEnd.HLSInputTests {
    /// A master whose variant has no audio of its own: the audio is an EXT-X-MEDIA rendition with a
    /// playlist of its own (as Apple's and livefilter's own ladders write it), read by a second reader
    /// and merged with the video in time order.
    @Test("HLS input: an audio rendition of its own (EXT-X-MEDIA with a URI) is read with the video", arguments: [false, true])
    func audioRendition(fmp4: Bool) async throws {
        let sandbox = try Sandbox("hls-in")
        defer { sandbox.remove() }
        let site = sandbox.file("site")
        let segmentType = fmp4 ? ["-hls_segment_type", "fmp4"] : []
        for (folder, map, codec) in [("video", "0:v", ["-c:v", "libx264", "-preset", "veryfast", "-g", "30"]), ("audio", "1:a", ["-c:a", "aac"])] {
            let dir = site.appendingPathComponent(folder)
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                              "-t", "4", "-map", map] + codec + ["-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod"] + segmentType
                             + ["-hls_segment_filename", dir.appendingPathComponent(fmp4 ? "s%d.m4s" : "s%d.ts").path,
                                dir.appendingPathComponent("index.m3u8").path])
        }
        let master = """
            #EXTM3U
            #EXT-X-VERSION:\(fmp4 ? 7 : 4)
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English",DEFAULT=YES,AUTOSELECT=YES,URI="audio/index.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=500000,RESOLUTION=320x240,AUDIO="aud"
            video/index.m3u8

            """
        try master.write(to: site.appendingPathComponent("master.m3u8"), atomically: true, encoding: .utf8)
        let server = try await FolderServer.start(site)
        defer { server.stop() }
        let output = sandbox.file("out.mp4")
        let result = try await Self.run(server.url("/master.m3u8"), to: output)
        try LiveFilter.requireSuccess(result)
        let timeline = try await OutputTimeline.measure(output)
        print("HLS input audio rendition (\(fmp4 ? "fMP4" : "TS")): \(timeline)")
        // FFmpeg's hls reader read renditions too; ours must not lose the audio.
        timeline.expectWhole(frames: 120)
        Self.expectClean(result)
        #expect(server.requests.contains { $0.path.hasPrefix("/audio/s3") }, "the rendition was read to its end")
    }
}
