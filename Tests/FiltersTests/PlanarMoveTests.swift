import Filters
import Testing

/// The planar move (used on Y, Cb, Cr planes) must equal the RGB chain it stands for, channel by
/// channel: each RGB channel is a plane of its own.
struct PlanarMoveTests {
    static let chains = ["mirror", "mirror vertical", "rotate 90", "rotate 180", "rotate 270", "rotate -90",
                         "rotate 90 | mirror", "mirror | rotate 270 | mirror vertical", ""]

    /// Sizes around the 16×16 blocks and 64×64 tiles: ragged edges, bands shorter than a block,
    /// several tiles and two bands, a picture smaller than a block; streamed, whole 64-byte lines
    /// with a ragged rest (130×74, 301×167, 200×150) and none (16×16).
    static let sizes = [FrameSize(width: 130, height: 74), FrameSize(width: 301, height: 167),
                        FrameSize(width: 16, height: 16), FrameSize(width: 33, height: 17), FrameSize(width: 15, height: 9),
                        FrameSize(width: 200, height: 150)]

    /// Each channel moved as a plane, into cache-line-aligned rows of the output's width rounded
    /// up to 64, as the pipeline's frames are: with `streaming` the transposes write whole lines
    /// around the cache, and with `ownsRowPadding` the last, partial line too (the transposed
    /// 301×167 and 200×150; 130×74 has too few columns in it), which must change nothing.
    @Test(arguments: chains, sizes)
    func matchesTheRGBChainPerChannel(_ text: String, size: FrameSize) throws {
        let image = SyntheticImage.natural(width: size.width, height: size.height, seed: 3)
        let chain = try FilterChain(parsing: text)
        let move = try #require(chain.planarMove(for: size))
        let expected = try ChainRenderer(chain: chain, inputSize: size).render(image)
        let out = move.outputSize(for: size)
        #expect(out == expected.size)
        let stride = (out.width + 63) / 64 * 64
        let moved = UnsafeMutableRawPointer.allocate(byteCount: stride * out.height, alignment: 64).bindMemory(to: UInt8.self, capacity: stride * out.height)
        defer { moved.deallocate() }
        for channel in 0..<3 {
            var plane = [UInt8](repeating: 0, count: size.width * size.height)
            for y in 0..<size.height { for x in 0..<size.width { plane[y * size.width + x] = image.row(y)[3 * x + channel] } }
            for (streaming, padded) in [(false, false), (true, false), (true, true)] {
                moved.update(repeating: 0, count: stride * out.height)
                plane.withUnsafeBufferPointer { src in
                    move.apply(src.baseAddress!, sourceStride: size.width, size: size, into: moved, destinationStride: stride, streaming: streaming,
                               ownsRowPadding: padded)
                }
                for y in 0..<out.height {
                    for x in 0..<out.width where moved[y * stride + x] != expected.row(y)[3 * x + channel] {
                        Issue.record("\(text) at \(size)\(streaming ? ", streamed" : "")\(padded ? " into padded rows" : ""): channel \(channel) differs at (\(x), \(y))")
                        return
                    }
                }
            }
        }
    }

    @Test func onlyPixelMovesQualify() throws {
        let size = FrameSize(width: 64, height: 36)
        #expect(try FilterChain(parsing: "blur 2").planarMove(for: size) == nil)
        #expect(try FilterChain(parsing: "rotate 90 | scale 32x32").planarMove(for: size) == nil)
        #expect(try FilterChain(parsing: "rotate 12").planarMove(for: size) == nil)
        #expect(try FilterChain(parsing: "").planarMove(for: size)?.isIdentity == true)
    }
}

/// The pass that writes a planar chain's output streams whole lines around the cache when the
/// destination's rows are line-aligned (the pipeline's frames); any other destination is written
/// through the cache. Both must give the same bytes.
struct StreamedOutputTests {
    /// Three planes with rows `pad` bytes longer than the width rounded up to 64 (`pad` 0: every
    /// row starts a cache line), in one 64-byte-aligned allocation filled with 7s.
    final class Planes {
        let view: PlanarYUV420View
        private let storage: UnsafeMutableRawPointer
        init(_ size: FrameSize, pad: Int, ownsRowPadding: Bool = false) {
            let stride = (size.width + 63) / 64 * 64 + pad, chromaStride = ((size.width + 1) / 2 + 63) / 64 * 64 + pad
            let rows = size.height, chromaRows = (size.height + 1) / 2
            let count = stride * rows + 2 * chromaStride * chromaRows + 64
            storage = .allocate(byteCount: count, alignment: 64)
            storage.initializeMemory(as: UInt8.self, repeating: 7, count: count)
            let base = storage.assumingMemoryBound(to: UInt8.self)
            let u = base + stride * rows, v = u + chromaStride * chromaRows
            view = PlanarYUV420View(width: size.width, height: size.height, y: base, yStride: stride, u: u, uStride: chromaStride,
                                    v: v, vStride: chromaStride, ownsRowPadding: ownsRowPadding)
        }

        /// Each plane's bytes from column `from(width)` to the end of its rows.
        func beyond(_ from: (Int) -> Int) -> [[UInt8]] {
            let planes = [(view.y, view.yStride, view.width, view.height), (view.u, view.uStride, view.chromaWidth, view.chromaHeight),
                          (view.v, view.vStride, view.chromaWidth, view.chromaHeight)]
            return planes.map { p in
                (0..<p.3).flatMap { y in Array(UnsafeBufferPointer(start: p.0 + y * p.1 + from(p.2), count: p.1 - from(p.2))) }
            }
        }
        deinit { storage.deallocate() }

        func bytes() -> [[UInt8]] {
            let planes = [(view.y, view.yStride, view.width, view.height), (view.u, view.uStride, view.chromaWidth, view.chromaHeight),
                          (view.v, view.vStride, view.chromaWidth, view.chromaHeight)]
            return planes.map { p in (0..<p.3).flatMap { y in Array(UnsafeBufferPointer(start: p.0 + y * p.1, count: p.2)) } }
        }
    }

    static let chains = ["rotate 90", "rotate 270 | mirror", "scale fit=1280x720", "scale 854x480", "scale 302x170",
                         "scale 1000x562 method=bilinear", "blur sigma=6 | rotate 90 | mirror | scale fit=720x1280"]
    /// Transposed, the rows end 56 and 28 bytes into a line (1080, 540), exactly one block into
    /// it (720; chroma 40), and too little of it for a block (1032 and 516: written through the cache).
    static let sizes = [FrameSize(1920, 1080), FrameSize(960, 540), FrameSize(1280, 720), FrameSize(1920, 1032)]

    /// Streamed into rows that own their padding (the last line whole) and into rows that do not
    /// (whole lines only), against the cache's path: the same picture.
    @Test(arguments: chains, sizes)
    func streamedAndCachedOutputsAreIdentical(_ text: String, size: FrameSize) throws {
        let chain = try FilterChain(parsing: text)
        let color = YUVConverter(matrix: .bt709, range: .limited)
        let renderer = try #require(PlanarChainRenderer(chain: chain, inputSize: size, color: color))
        let source = Planes(size, pad: 0)
        color.rgbToYUV420(SyntheticImage.natural(width: size.width, height: size.height, seed: 5), into: source.view)
        let cached = Planes(renderer.outputSize, pad: 32)
        renderer.render(source.view, into: cached.view)
        for padded in [true, false] {
            let streamed = Planes(renderer.outputSize, pad: 0, ownsRowPadding: padded)
            renderer.render(source.view, into: streamed.view)
            let a = streamed.bytes(), b = cached.bytes()
            for plane in 0..<3 where a[plane] != b[plane] {
                let first = zip(a[plane], b[plane]).enumerated().first { $0.element.0 != $0.element.1 }!.offset
                Issue.record("\(text) at \(size)\(padded ? " into padded rows" : ""): plane \(plane) differs first at sample \(first)")
            }
        }
    }

    /// Rows a line longer than their picture needs: with `ownsRowPadding` the output pass may write
    /// up to the end of the picture's last line, never past it; without, never past the picture.
    @Test(arguments: ["rotate 90", "blur sigma=6 | rotate 90 | mirror | scale fit=720x1280", "scale 854x480"])
    func writesNoFurtherThanThePaddingAllows(_ text: String) throws {
        let size = FrameSize(1920, 1080)
        let chain = try FilterChain(parsing: text)
        let color = YUVConverter(matrix: .bt709, range: .limited)
        let renderer = try #require(PlanarChainRenderer(chain: chain, inputSize: size, color: color))
        let source = Planes(size, pad: 0)
        color.rgbToYUV420(SyntheticImage.natural(width: size.width, height: size.height, seed: 9), into: source.view)
        for padded in [true, false] {
            let out = Planes(renderer.outputSize, pad: 64, ownsRowPadding: padded)
            renderer.render(source.view, into: out.view)
            let untouched = out.beyond { padded ? ($0 + 63) / 64 * 64 : $0 }
            for plane in 0..<3 where untouched[plane].contains(where: { $0 != 7 }) {
                Issue.record("\(text)\(padded ? " into padded rows" : ""): plane \(plane) written past \(padded ? "its last line" : "the picture")")
            }
        }
    }
}
