import Filters
import Testing

/// The planar move (used on Y, Cb, Cr planes) must equal the RGB chain it stands for, channel by
/// channel: each RGB channel is a plane of its own.
struct PlanarMoveTests {
    static let chains = ["mirror", "mirror vertical", "rotate 90", "rotate 180", "rotate 270", "rotate -90",
                         "rotate 90 | mirror", "mirror | rotate 270 | mirror vertical", ""]

    /// Sizes around the 16×16 blocks and 64×64 tiles: ragged edges, bands shorter than a block,
    /// several tiles and two bands, a picture smaller than a block.
    static let sizes = [FrameSize(width: 130, height: 74), FrameSize(width: 301, height: 167),
                        FrameSize(width: 16, height: 16), FrameSize(width: 33, height: 17), FrameSize(width: 15, height: 9)]

    @Test(arguments: chains, sizes)
    func matchesTheRGBChainPerChannel(_ text: String, size: FrameSize) throws {
        let image = SyntheticImage.natural(width: size.width, height: size.height, seed: 3)
        let chain = try FilterChain(parsing: text)
        let move = try #require(chain.planarMove(for: size))
        let expected = try ChainRenderer(chain: chain, inputSize: size).render(image)
        let out = move.outputSize(for: size)
        #expect(out == expected.size)
        for channel in 0..<3 {
            var plane = [UInt8](repeating: 0, count: size.width * size.height)
            for y in 0..<size.height { for x in 0..<size.width { plane[y * size.width + x] = image.row(y)[3 * x + channel] } }
            var moved = [UInt8](repeating: 0, count: out.width * out.height + 7)
            plane.withUnsafeBufferPointer { src in
                moved.withUnsafeMutableBufferPointer { dst in
                    move.apply(src.baseAddress!, sourceStride: size.width, size: size, into: dst.baseAddress!, destinationStride: out.width)
                }
            }
            for y in 0..<out.height {
                for x in 0..<out.width where moved[y * out.width + x] != expected.row(y)[3 * x + channel] {
                    Issue.record("\(text) at \(size): channel \(channel) differs at (\(x), \(y))")
                    return
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
