import FilterReferences
import Filters
import Testing

/// Exact filters against libavfilter, byte for byte, on an odd-sized natural image.
@Suite struct ExactOracleTests {
    static let cases: [(String, String)] = [
        ("mirror", "hflip"), ("mirror vertical", "vflip"),
        ("rotate 90", "transpose=clock"), ("rotate 270", "transpose=cclock"), ("rotate -90", "transpose=cclock"),
        ("rotate 180", "hflip,vflip"), ("crop 320x200+17+33", "crop=320:200:17:33"),
        ("rotate 90 | mirror", "transpose=clock,hflip"), ("mirror | rotate -90 | mirror vertical", "hflip,transpose=cclock,vflip"),
    ]

    @Test(arguments: cases.indices, [FrameSize(641, 359), FrameSize(1920, 1080)])
    func byteIdenticalToLibavfilter(index: Int, size: FrameSize) throws {
        let (chainText, graph) = Self.cases[index]
        let image = Images.natural(size.width, size.height, seed: 3)
        let renderer = try ChainRenderer(chain: try FilterChain(parsing: chainText), inputSize: image.size)
        let ours = renderer.render(image)
        let reference = try Oracle.libavfilter(graph, image)
        #expect(ours.size == reference.size)
        #expect(ours.packedBytes() == reference.packedBytes(), "\(chainText) vs \(graph)")
    }
}

@Suite struct LawTests {
    let image = Images.natural(97, 61, seed: 5)

    @Test(arguments: Mirror.Axis.allCases)
    func mirrorTwiceIsIdentity(axis: Mirror.Axis) throws {
        let once = try render(Mirror(axis: axis), image)
        #expect(once.packedBytes() != image.packedBytes())
        #expect(try render(Mirror(axis: axis), once).packedBytes() == image.packedBytes())
    }

    @Test func fourQuarterTurnsAreIdentity() throws {
        var current = image
        for _ in 0..<4 {
            let turned = try render(Rotate(.clockwise), current)
            #expect(turned.size == current.size.swapped)
            current = turned
        }
        #expect(current.packedBytes() == image.packedBytes())
    }

    @Test func quarterTurnSemantics() throws {
        // Clockwise: the top-left pixel goes to the top-right corner.
        let turned = try render(Rotate(.clockwise), image)
        #expect(turned[image.height - 1, 0] == image[0, 0])
        let back = try render(Rotate(.counterClockwise), turned)
        #expect(back.packedBytes() == image.packedBytes())
        #expect(try render(Rotate(quarterTurns: -1), image).packedBytes() == render(Rotate(quarterTurns: 3), image).packedBytes())
    }

    @Test func fusedChainsMatchStepByStep() throws {
        let chains = ["rotate 90 | rotate 90 | mirror", "mirror | mirror", "rotate -90 | mirror vertical | rotate 180 | mirror",
                      "rotate 90 | blur 1 | rotate -90 | mirror"]
        for text in chains {
            let chain = try FilterChain(parsing: text)
            var stepwise = image
            for filter in chain.filters { stepwise = try render(filter, stepwise) }
            let renderer = try ChainRenderer(chain: chain, inputSize: image.size)
            #expect(renderer.render(image).packedBytes() == stepwise.packedBytes(), "\(text)")
            #expect(renderer.outputSize == stepwise.size)
        }
        #expect(try ChainRenderer(chain: FilterChain(parsing: "rotate 90 | mirror | rotate 90 | mirror vertical"), inputSize: image.size).passCount == 1)
        #expect(try ChainRenderer(chain: FilterChain(parsing: "mirror | mirror"), inputSize: image.size).passCount == 0)
    }

    @Test func emptyChainReturnsSource() throws {
        let renderer = try ChainRenderer(chain: FilterChain(), inputSize: image.size)
        #expect(renderer.render(image) === image)
    }

    @Test func chainBuffersAreReusedAcrossFrames() throws {
        let renderer = try ChainRenderer(chain: FilterChain(parsing: "scale 50x30 | blur 3 | crop 20x10+5+5"), inputSize: image.size)
        let first = renderer.render(image)
        #expect(renderer.render(image) === first)
        #expect(first.size == FrameSize(20, 10))
    }

    @Test func cropOutsideTheFrameIsAnError() {
        #expect(throws: FilterError.self) { try Crop(width: 90, height: 10, x: 10, y: 0).outputSize(for: FrameSize(97, 61)) }
        #expect(throws: FilterError.self) { try ChainRenderer(chain: FilterChain(parsing: "crop 640x360+0+0"), inputSize: FrameSize(97, 61)) }
    }
}

@Suite struct ArbitraryRotateTests {
    @Test func expandGivesTheBoundingBox() throws {
        let size = FrameSize(640, 360)
        let out = try Rotate(degrees: 30).outputSize(for: size)
        let c = 0.8660254037844387, s = 0.5
        #expect(out == FrameSize(width: Int((640 * c + 360 * s).rounded(.up)), height: Int((640 * s + 360 * c).rounded(.up))))
        #expect(try Rotate(degrees: 30, canvas: .keep).outputSize(for: size) == size)
        #expect(try Rotate(degrees: 90).outputSize(for: size) == size.swapped)
    }

    @Test func zeroDegreesKeepsTheImage() throws {
        let image = Images.natural(131, 77)
        #expect(try render(Rotate(degrees: 0.0), image).packedBytes() == image.packedBytes())
        #expect(try render(Rotate(degrees: 360, canvas: .keep), image).packedBytes() == image.packedBytes())
    }

    @Test func thereAndBackIsCloseInTheMiddle() throws {
        let image = Images.natural(401, 301)
        let back = try render(Rotate(degrees: -30, canvas: .keep), try render(Rotate(degrees: 30, canvas: .keep), image))
        let middle = PixelRect(x: 150, y: 110, width: 100, height: 80)
        let crop = Crop(width: middle.width, height: middle.height, x: middle.x, y: middle.y)
        let quality = psnr(try render(crop, back), try render(crop, image))
        #expect(quality >= 25, "PSNR \(quality) dB")  // two bilinear resamplings soften fine grain
    }

    @Test func cornersGetTheFillColour() throws {
        let image = Images.natural(200, 100)
        let out = try render(Rotate(degrees: 45, fill: RGBColor(r: 10, g: 200, b: 30)), image)
        #expect(out[0, 0] == (10, 200, 30))
        #expect(out[out.width - 1, out.height - 1] == (10, 200, 30))
    }
}
