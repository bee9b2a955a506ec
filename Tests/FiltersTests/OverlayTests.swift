import Filters
import Foundation
import Testing

/// `overlay` against libavfilter's overlay (`movie=` reads the same PNG in the graph), and the
/// anchors, opacity, scale and hostile files.
@Suite(.serialized) struct OverlayTests {
    static let folder: URL = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("overlay-tests-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }()

    /// Makes a PNG with ffmpeg: `graph` over a `size` null source, in `format`.
    static func png(_ name: String, size: String, graph: String, format: String) throws -> String {
        let path = folder.appendingPathComponent(name).path
        guard !FileManager.default.fileExists(atPath: path) else { return path }
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-v", "error", "-y", "-f", "lavfi", "-i", "nullsrc=s=\(size)", "-vf", graph + ",format=\(format)",
                            "-frames:v", "1", path]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        guard ffmpeg.terminationStatus == 0 else { throw Oracle.Failure(description: "ffmpeg could not make \(name)") }
        return path
    }

    /// A logo with an alpha gradient (0…255), colours varying: every blend weight is exercised.
    static func gradientLogo() throws -> String {
        try png("gradient.png", size: "96x64", graph: "format=rgba,geq=r='X*2':g='255-Y*3':b='128+X-Y':a='mod(X*3+Y*2\\,256)'", format: "rgba")
    }

    @Test("straight alpha: libavfilter's overlay (format=rgb) to the bit, anchored right-16/top+16 and at a plain position",
          arguments: [("right-16", "top+16", "W-w-16", "16"), ("37", "21", "37", "21"), ("center", "bottom", "(W-w)/2", "H-h")])
    func matchesLibavfilter(x: String, y: String, fx: String, fy: String) throws {
        let logo = try Self.gradientLogo()
        let image = Images.natural(320, 180)
        let ours = try FiltersTests.render(try #require(FilterChain(parsing: "overlay \(logo) x=\(x) y=\(y)").filters.first), image)
        let theirs = try Oracle.libavfilter("movie=\(logo)[logo];[in][logo]overlay=x=\(fx):y=\(fy):format=rgb", image)
        #expect(ToneTests.maxDifference(ours, theirs) == 0)
    }

    @Test("premultiplied alpha: libavfilter's overlay alpha=premultiplied to the bit")
    func premultipliedMatchesLibavfilter() throws {
        // A premultiplied image: colour never above alpha.
        let logo = try Self.png("premultiplied.png", size: "80x48",
                                graph: "format=rgba,geq=a='X*3':r='X*3*0.9':g='X*3*0.5':b='X*3*0.2'", format: "rgba")
        let image = Images.natural(200, 120)
        let ours = try FiltersTests.render(try #require(FilterChain(parsing: "overlay \(logo) x=10 y=20 alpha=premultiplied").filters.first), image)
        let theirs = try Oracle.libavfilter("movie=\(logo)[logo];[in][logo]overlay=x=10:y=20:format=rgb:alpha=premultiplied", image)
        #expect(ToneTests.maxDifference(ours, theirs) == 0)
    }

    @Test("opacity multiplies alpha; scale resizes without a dark fringe; a logo partly outside is clipped; palette PNGs read")
    func opacityScaleClipPalette() throws {
        let white = try Self.png("white.png", size: "40x40", graph: "format=rgba,geq=r=255:g=255:b=255:a=255", format: "rgba")
        let frame = RGBImage(width: 100, height: 80)
        frame.fill(r: 0, g: 0, b: 0)
        let half = try FiltersTests.render(try #require(FilterChain(parsing: "overlay \(white) x=10 y=10 opacity=0.5").filters.first), frame)
        #expect(abs(Int(half[20, 20].r) - 128) <= 1 && half[5, 5].r == 0)
        // Scaled 2x: 80x80 of white over black at (10, 10), clipped at the frame's bottom; the edge
        // of an opaque white square stays white (premultiplied resampling), the outside black.
        let big = try FiltersTests.render(try #require(FilterChain(parsing: "overlay \(white) x=10 y=10 scale=2").filters.first), frame)
        #expect(big[10, 10].r == 255 && big[89, 79].r == 255 && big[9, 10].r == 0 && big[90, 40].r == 0)
        let outside = try FiltersTests.render(try #require(FilterChain(parsing: "overlay \(white) x=right+50 y=-5").filters.first), frame)
        #expect(ToneTests.maxDifference(outside, frame) == 0, "wholly outside: nothing drawn")
        let palette = try Self.png("palette.png", size: "32x32", graph: "format=rgb24,geq=r='X*8':g='Y*8':b=60", format: "pal8")
        let paletted = try #require(FilterChain(parsing: "overlay \(palette)").filters.first as? Overlay)
        #expect(paletted.image.width == 32 && paletted.image.pixels[3] == 255)
    }

    @Test("bad images are errors naming the file", arguments: ["/nonexistent/logo.png", "/dev/zero", "/etc/hostname", "/tmp"])
    func badFiles(path: String) {
        do {
            _ = try FilterChain(parsing: "overlay \(path)")
            Issue.record("\(path) was accepted")
        } catch {
            #expect("\(error)".contains(path), "\(error)")
        }
    }
}
