import Foundation
import Testing

/// The timeline in a real run on decoded media: `enable=`, fades and tracks evaluated at each
/// output tick's time, compared frame by frame with ffmpeg's own decode through libavfilter.
@Suite struct TimelineRunTests {
    /// Runs `chain` over the 30 fps landscape sample into PNG frames; frame k (1-based file k) is tick k − 1.
    static func frames(_ chain: String, in sandbox: Sandbox, extra: [String] = []) async throws -> URL {
        let folder = sandbox.file("frames")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let result = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", folder.appendingPathComponent("%04d.png").path,
                                               "--chain", chain, "--quiet"] + extra)
        try LiveFilter.requireSuccess(result)
        return folder
    }

    static func ours(_ folder: URL, tick: Int) async throws -> RGBPicture {
        try await RGBPicture.png(folder.appendingPathComponent(String(format: "%04d.png", tick + 1)))
    }

    @Test("invert enable=1-2: ticks 30…59 (1 s ≤ t < 2 s) are ffmpeg's negate of the decoded frame, 29 and 60 are not")
    func enableOnDecodedFrames() async throws {
        let sandbox = try Sandbox("timeline-enable")
        defer { sandbox.remove() }
        let folder = try await Self.frames("invert enable=1-2", in: sandbox)
        for tick in [0, 29, 30, 45, 59, 60, 90] {
            let on = tick >= 30 && tick < 60
            let ours = try await Self.ours(folder, tick: tick)
            let plain = try await RGBPicture.frame(of: Sample.landscape.url, number: tick)
            let negated = try await RGBPicture.frame(of: Sample.landscape.url, number: tick, filter: "negate")
            let expected = on ? negated : plain, other = on ? plain : negated
            #expect(ours.psnr(expected) >= 35, "tick \(tick): \(ours.psnr(expected)) dB against the \(on ? "negated" : "plain") frame")
            #expect(ours.psnr(other) < 20, "tick \(tick): the filter is \(on ? "on" : "off")")
        }
    }

    @Test("fade in=0.5,1 follows ffmpeg's fade (st=0.5:d=1) on the decoded frames, tick by tick (≥ 35 dB)")
    func fadeOnDecodedFrames() async throws {
        let sandbox = try Sandbox("timeline-fade")
        defer { sandbox.remove() }
        let folder = try await Self.frames("fade in=0.5,1", in: sandbox)
        for tick in [0, 14, 15, 20, 30, 40, 44, 45, 46, 60] {
            let ours = try await Self.ours(folder, tick: tick)
            let theirs = try await RGBPicture.frame(of: Sample.landscape.url, number: tick, filter: "format=rgb24,fade=t=in:st=0.5:d=1")
            #expect(ours.psnr(theirs) >= 35, "tick \(tick): \(ours.psnr(theirs)) dB")
        }
    }

    @Test("a tracked mosaic on decoded media: each box at its interpolated place covered at its tick, the rest of the picture untouched")
    func trackOnDecodedFrames() async throws {
        let sandbox = try Sandbox("timeline-track")
        defer { sandbox.remove() }
        // One box moving right 300 px over 2 s, held 0.5 s after its last keyframe.
        let track = sandbox.file("faces.csv")
        try "time,x,y,w,h,id\n0,40,100,120,90,face\n2,340,100,120,90,face\n".write(to: track, atomically: true, encoding: .utf8)
        let folder = try await Self.frames("pixelate size=16 track=\(track.path) hold=0.5", in: sandbox)
        for tick in [0, 30, 60, 75, 90] {
            let t = Double(tick) / 30
            let ours = try await Self.ours(folder, tick: tick)
            let plain = try await RGBPicture.frame(of: Sample.landscape.url, number: tick)
            let shown = t <= 2.5
            let x = 40 + Int((min(t, 2) / 2 * 300).rounded())
            if shown {
                let inside = ours.cropped(x: x + 8, y: 108, width: 104, height: 74).psnr(plain.cropped(x: x + 8, y: 108, width: 104, height: 74))
                #expect(inside < 30, "tick \(tick): the box at x \(x) is a mosaic (\(inside) dB against the plain frame)")
            }
            // Away from the box (left of it, or everything once it has gone) the picture is the decoded one.
            let outside = shown ? ours.cropped(x: 0, y: 220, width: 640, height: 140).psnr(plain.cropped(x: 0, y: 220, width: 640, height: 140))
                : ours.psnr(plain)
            #expect(outside >= 35, "tick \(tick): outside the box \(outside) dB")
        }
    }
}
