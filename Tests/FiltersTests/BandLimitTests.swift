@_spi(Testing) import Filters
import Synchronization
import Testing

/// `Parallel.withBands(atMost:)`: what a pipeline stage uses to keep a picture's passes on its own
/// thread. Fewer bands than a renderer asks for must change where work runs, never what it makes.
@Suite struct BandLimitTests {
    /// The bands one split makes, as (band, range) pairs in band order.
    static func bands(of count: Int, asking: Int) -> [(Int, Range<Int>)] {
        let seen = Mutex<[(Int, Range<Int>)]>([])
        Parallel.forEachBand(of: count, bands: asking) { band, range in seen.withLock { $0.append((band, range)) } }
        return seen.withLock { $0 }.sorted { $0.0 < $1.0 }
    }

    @Test func aLimitCutsTheBandsAndEndsWithItsBody() {
        #expect(Self.bands(of: 100, asking: 4).map(\.1) == [0..<25, 25..<50, 50..<75, 75..<100])
        Parallel.withBands(atMost: 1) {
            #expect(Self.bands(of: 100, asking: 4).map(\.1) == [0..<100])
            // The innermost limit holds; a limit below 1 means 1.
            Parallel.withBands(atMost: 2) { #expect(Self.bands(of: 100, asking: 4).map(\.1) == [0..<50, 50..<100]) }
            Parallel.withBands(atMost: 0) { #expect(Self.bands(of: 100, asking: 4).count == 1) }
        }
        Parallel.withBands(atMost: 3) { #expect(Self.bands(of: 100, asking: 2).count == 2, "a limit never adds bands") }
        #expect(Self.bands(of: 100, asking: 4).count == 4, "the limit ended with its body")
    }

    /// Every renderer that keeps scratch memory per band, and the planar chain, run with their
    /// splits cut to one band: the same bytes as split into as many bands as they ask for.
    @Test(arguments: ["blur sigma=6", "blur sigma=30", "boxblur 4 | sharpen", "pixelate 16 | eq contrast=1.2",
                      "scale fit=1280x720", "scale 302x170 method=bilinear", "rotate 30 | grayscale | invert",
                      "rotate 90 | mirror | crop 640x360+10+20"])
    func oneBandMakesTheSamePicture(_ text: String) throws {
        let chain = try FilterChain(parsing: text)
        let image = SyntheticImage.natural(width: 1920, height: 1080, seed: 9)
        let split = try ChainRenderer(chain: chain, inputSize: image.size).render(image)
        let whole = try Parallel.withBands(atMost: 1) { try ChainRenderer(chain: chain, inputSize: image.size).render(image) }
        #expect(ToneTests.maxDifference(split, whole) == 0)
    }

    /// The same on the planes: the chains the pipeline runs there, one band against as many as asked.
    @Test(arguments: ["rotate 90", "scale fit=1280x720", "blur sigma=6 | rotate 90 | mirror | scale fit=720x1280",
                      "boxblur 3 | pixelate 8"])
    func oneBandMakesTheSamePlanes(_ text: String) throws {
        let size = FrameSize(1920, 1080)
        let chain = try FilterChain(parsing: text)
        let color = YUVConverter(matrix: .bt709, range: .limited)
        let source = StreamedOutputTests.Planes(size, pad: 0)
        color.rgbToYUV420(SyntheticImage.natural(width: size.width, height: size.height, seed: 4), into: source.view)
        let renderer = try #require(PlanarChainRenderer(chain: chain, inputSize: size, color: color))
        let split = StreamedOutputTests.Planes(renderer.outputSize, pad: 0, ownsRowPadding: true)
        let whole = StreamedOutputTests.Planes(renderer.outputSize, pad: 0, ownsRowPadding: true)
        renderer.render(source.view, into: split.view)
        Parallel.withBands(atMost: 1) { renderer.render(source.view, into: whole.view) }
        #expect(split.bytes() == whole.bytes())
    }
}
