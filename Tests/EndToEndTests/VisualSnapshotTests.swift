import Foundation
import Testing

extension EndToEnd {
    /// `livefilter snapshot`: the frame at a time, before|after, contact sheets, and its errors.
    /// Nested in `EndToEnd`, so it runs serialized with the encodes.
    @Suite("Visual: snapshot")
    struct VisualSnapshot {
        /// `livefilter snapshot ARGS… -o sandbox/NAME`, required to succeed; returns the PNG.
        func snapshot(_ input: URL, _ arguments: [String], in sandbox: Sandbox, name: String = "shot.png",
                      sourceLocation: SourceLocation = #_sourceLocation) async throws -> URL {
            let output = sandbox.file(name)
            let result = try await LiveFilter.run(["snapshot", input.path, "-o", output.path] + arguments, timeout: .seconds(60))
            try LiveFilter.requireSuccess(result, sourceLocation: sourceLocation)
            return output
        }

        @Test("the frame at --at matches ffmpeg's frame at that time through the libavfilter equivalent",
              arguments: [("mirror", "hflip"), ("mirror vertical", "vflip"), ("rotate 90", "transpose=clock"), ("", "null")])
        func frameAtTimeMatchesFFmpeg(chain: String, libavfilter: String) async throws {
            let sandbox = try Sandbox("visual-snap")
            defer { sandbox.remove() }
            // 2.5 s is frame 75 of the 30 fps clip exactly: "newest frame ≤ t" and ffmpeg's
            // accurate seek ("first frame ≥ t") agree on it.
            let png = try await snapshot(Sample.landscape.url, ["--at", "2.5", "--chain", chain], in: sandbox)
            let size = try PNGFile.size(png)
            let ours = try await RGBPicture.png(png)
            let reference = try await RGBPicture.frame(of: Sample.landscape.url, at: 2.5, filter: libavfilter)
            #expect(size.width == reference.width && size.height == reference.height, "IHDR \(size), ffmpeg \(reference.width)x\(reference.height)")
            let psnr = ours.psnr(reference)
            #expect(psnr >= 35, "PSNR against ffmpeg -ss 2.5 -vf \(libavfilter): \(psnr) dB")
            // And it is not just any frame of the clip: the neighbours are clearly different.
            let neighbour = try await RGBPicture.frame(of: Sample.landscape.url, at: 2.0, filter: libavfilter)
            #expect(ours.psnr(neighbour) < psnr, "frame at 2.0 s is as close as the one at 2.5 s")
        }

        @Test("a time between two frames gives the newest frame before it")
        func newestFrameAtOrBefore() async throws {
            let sandbox = try Sandbox("visual-snap")
            defer { sandbox.remove() }
            // Frame 75 is at 2.5 s and frame 76 at 2.5333 s: 2.52 s shows frame 75.
            let ours = try await RGBPicture.png(try await snapshot(Sample.landscape.url, ["--at", "2.52"], in: sandbox))
            let frame75 = try await RGBPicture.frame(of: Sample.landscape.url, number: 75)
            #expect(ours.psnr(frame75) >= 35, "PSNR against frame 75: \(ours.psnr(frame75)) dB")
        }

        @Test("the rotated phone clip is upright: 360x640, like ffmpeg's autorotate")
        func rotatedSampleUpright() async throws {
            let sandbox = try Sandbox("visual-snap")
            defer { sandbox.remove() }
            let png = try await snapshot(Sample.portraitRotated.url, ["--at", "1"], in: sandbox)
            let size = try PNGFile.size(png)
            #expect(size.width == 360 && size.height == 640, "\(size)")
            let ours = try await RGBPicture.png(png)
            let reference = try await RGBPicture.frame(of: Sample.portraitRotated.url, at: 1)
            #expect(ours.psnr(reference) >= 35, "PSNR against ffmpeg's autorotated frame: \(ours.psnr(reference)) dB")
            #expect(ours.whiteCorners == [.bottomLeft])
        }

        @Test("MPEG-TS (no index, start offset): the frame at --at, not the next keyframe",
              arguments: [(0.0, 0), (0.5, 11), (1.0, 24), (2.0, 49)])
        func transportStreamFrame(at seconds: Double, frame number: Int) async throws {
            let sandbox = try Sandbox("visual-snap")
            defer { sandbox.remove() }
            // Times count from the container start (1.458667 s, the audio's); video frame n is at
            // 1.48 + n/25 s, so --at 1.0 shows frame 24. (ffmpeg's own -ss lands on frame 50 here, so
            // the reference decodes from the start and picks the frame by number.)
            let ours = try await RGBPicture.png(try await snapshot(Sample.transport.url, ["--at", String(seconds)], in: sandbox))
            let reference = try await RGBPicture.frame(of: Sample.transport.url, number: number)
            #expect(ours.psnr(reference) >= 35, "--at \(seconds) vs frame \(number): \(ours.psnr(reference)) dB")
        }

        @Test("--compare: before, an 8-pixel gap, after; each half is its own frame")
        func compareSideBySide() async throws {
            let sandbox = try Sandbox("visual-snap")
            defer { sandbox.remove() }
            let png = try await snapshot(Sample.landscape.url, ["--at", "2.5", "--chain", "mirror | scale width=320", "--compare"], in: sandbox)
            let size = try PNGFile.size(png)
            #expect(size.width == 640 + 8 + 320 && size.height == 360, "\(size)")
            let sheet = try await RGBPicture.png(png)
            let before = sheet.cropped(x: 0, y: 0, width: 640, height: 360)
            let reference = try await RGBPicture.frame(of: Sample.landscape.url, at: 2.5)
            #expect(before.psnr(reference) >= 35, "left half is the unfiltered frame: \(before.psnr(reference)) dB")
            let after = sheet.cropped(x: 648, y: 90, width: 320, height: 180)
            let filtered = try await RGBPicture.frame(of: Sample.landscape.url, at: 2.5, filter: "hflip,scale=320:180:flags=bicubic")
            #expect(after.psnr(filtered) >= 30, "right half is the filtered frame: \(after.psnr(filtered)) dB")
            #expect(sheet.pixel(644, 10) == [24, 24, 24], "the gap is the dark background")
        }

        @Test("--grid 4x3: twelve cells of --cell-width, in time order")
        func contactSheet() async throws {
            let sandbox = try Sandbox("visual-snap")
            defer { sandbox.remove() }
            let png = try await snapshot(Sample.landscape.url, ["--grid", "4x3", "--cell-width", "160"], in: sandbox)
            let size = try PNGFile.size(png)
            // 4 cells of 160x90 with 4-pixel gaps around and between them.
            #expect(size.width == 4 * 160 + 5 * 4 && size.height == 3 * 90 + 4 * 4, "\(size)")
            let sheet = try await RGBPicture.png(png)
            let background: [UInt8] = [24, 24, 24]
            var cells = 0
            for row in 0..<3 {
                for column in 0..<4 {
                    let x = 4 + column * 164, y = 4 + row * 94
                    if sheet.pixel(x + 80, y + 45) != background { cells += 1 }
                    #expect(sheet.pixel(x - 2, y + 45) == background, "gap left of cell \(row),\(column)")
                }
            }
            #expect(cells == 12)
            // Cell i shows the frame at (i + 0.5) * 5 s / 12: the first is from 0.208 s, the last from 4.79 s.
            let first = sheet.cropped(x: 4, y: 4, width: 160, height: 90)
            let last = sheet.cropped(x: 4 + 3 * 164, y: 4 + 2 * 94, width: 160, height: 90)
            let frame6 = try await RGBPicture.frame(of: Sample.landscape.url, number: 6, filter: "scale=160:90:flags=bicubic")
            let frame143 = try await RGBPicture.frame(of: Sample.landscape.url, number: 143, filter: "scale=160:90:flags=bicubic")
            #expect(first.psnr(frame6) >= 28, "first cell vs frame 6 (0.2 s): \(first.psnr(frame6)) dB")
            #expect(last.psnr(frame143) >= 28, "last cell vs frame 143 (4.767 s): \(last.psnr(frame143)) dB")
            #expect(first.psnr(last) < 30, "first and last cells differ")
        }

        @Test("errors: missing input 4, bad chain 3 naming the token, existing output 8, --at past the end 2")
        func errors() async throws {
            let sandbox = try Sandbox("visual-snap")
            defer { sandbox.remove() }
            let out = sandbox.file("x.png").path
            LiveFilter.expectError(try await LiveFilter.run(["snapshot", sandbox.file("nope.mp4").path, "-o", out]), .inputUnreadable)
            LiveFilter.expectError(try await LiveFilter.run(["snapshot", Sample.landscape.url.path, "--chain", "blur 3 | spin 90", "-o", out]),
                                   .badChain, mentioning: "spin")
            LiveFilter.expectError(try await LiveFilter.run(["snapshot", Sample.landscape.url.path, "--chain", "blur sigma=500", "-o", out]),
                                   .badChain, mentioning: "500")
            LiveFilter.expectError(try await LiveFilter.run(["snapshot", Sample.landscape.url.path, "--at", "5.5", "-o", out]),
                                   .usage, mentioning: "past the end")
            #expect(try sandbox.contents().isEmpty, "no file after a failure")
            try Data("keep".utf8).write(to: URL(fileURLWithPath: out))
            LiveFilter.expectError(try await LiveFilter.run(["snapshot", Sample.landscape.url.path, "-o", out]), .outputExists)
            #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data("keep".utf8))
            // At the very end (the duration itself) is allowed: the last frame.
            let last = try await snapshot(Sample.landscape.url, ["--at", "5"], in: sandbox, name: "last.png")
            let reference = try await RGBPicture.frame(of: Sample.landscape.url, number: 149)
            #expect(try await RGBPicture.png(last).psnr(reference) >= 35)
        }
    }
}
