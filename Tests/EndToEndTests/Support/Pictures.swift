import Foundation

/// Helpers for the snapshot and player tests: PNG headers, ffmpeg reference frames, PSNR.
enum PNGFile {
    /// Width and height from the IHDR chunk (bytes 16–23, big-endian), after checking the signature.
    static func size(_ url: URL) throws -> (width: Int, height: Int) {
        let bytes = [UInt8](try Data(contentsOf: url).prefix(24))
        guard bytes.count == 24, bytes[0..<8].elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
              String(decoding: bytes[12..<16], as: UTF8.self) == "IHDR" else {
            throw ToolFailure("\(url.path) is not a PNG file")
        }
        func be32(_ at: Int) -> Int { bytes[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
        return (be32(16), be32(20))
    }
}

extension RGBPicture {
    /// The frame ffmpeg shows at `seconds` (`-ss` before `-i`: an accurate seek from the container's
    /// start), optionally through a libavfilter graph, as rgb24.
    static func frame(of url: URL, at seconds: Double, filter: String? = nil) async throws -> RGBPicture {
        var arguments = ["-ss", String(seconds), "-i", url.path, "-frames:v", "1"]
        if let filter { arguments += ["-vf", filter] }
        arguments += ["-f", "image2pipe", "-c:v", "ppm", "-pix_fmt", "rgb24", "-"]
        return try parsePPM(try await ffmpeg(arguments).stdout)
    }

    /// The `index`-th decoded frame, decoding from the start (no seek at all).
    static func frame(of url: URL, number index: Int, filter: String? = nil) async throws -> RGBPicture {
        let graph = "select=eq(n\\,\(index))" + (filter.map { "," + $0 } ?? "")
        return try parsePPM(try await ffmpeg(["-i", url.path, "-vf", graph, "-frames:v", "1",
                                       "-f", "image2pipe", "-c:v", "ppm", "-pix_fmt", "rgb24", "-"]).stdout)
    }

    /// A PNG written by livefilter, decoded by ffmpeg.
    static func png(_ url: URL) async throws -> RGBPicture { try await firstFrame(of: url) }

    /// Peak signal-to-noise ratio over all three channels, in dB (infinity when identical).
    func psnr(_ other: RGBPicture) -> Double {
        precondition(width == other.width && height == other.height, "PSNR of \(width)x\(height) and \(other.width)x\(other.height)")
        var squared = 0.0
        for (a, b) in zip(pixels, other.pixels) {
            let d = Double(a) - Double(b)
            squared += d * d
        }
        let mse = squared / Double(pixels.count)
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    /// The RGB triple at (x, y).
    func pixel(_ x: Int, _ y: Int) -> [UInt8] {
        let i = (y * width + x) * 3
        return Array(pixels[i..<(i + 3)])
    }

    /// A copy of the rectangle at (x, y) sized w×h.
    func cropped(x: Int, y: Int, width w: Int, height h: Int) -> RGBPicture {
        var out: [UInt8] = []
        out.reserveCapacity(w * h * 3)
        for row in y..<(y + h) {
            let start = (row * width + x) * 3
            out += pixels[start..<(start + w * 3)]
        }
        return RGBPicture(width: w, height: h, pixels: out)
    }
}
