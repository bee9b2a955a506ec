import Filters
import Testing

/// `boxblur` against libavfilter's boxblur on every plane (gbrp: the same arithmetic per channel).
@Suite struct BoxBlurTests {
    // The radius may be half the smaller side (as libavfilter allows); there libavfilter reads one
    // pixel past the row (vf_boxblur.c's first loop reaches src[2R] = src[len]), so the compared
    // cases stop one short of it.
    @Test("boxblur equals libavfilter's boxblur to the bit: radius, power, odd sizes, nearly the largest radius",
          arguments: [(1280, 720, 4, 1), (641, 359, 20, 2), (64, 48, 23, 3), (33, 17, 1, 4), (1920, 1080, 60, 1)])
    func matchesLibavfilter(width: Int, height: Int, radius: Int, power: Int) throws {
        let image = Images.natural(width, height)
        let ours = try render(BoxBlur(radius: radius, power: power), image)
        let reference = try Oracle.libavfilter(
            "format=gbrp,boxblur=luma_radius=\(radius):luma_power=\(power):chroma_radius=\(radius):chroma_power=\(power)", image)
        #expect(ToneTests.maxDifference(ours, reference) == 0)
    }

    @Test("a flat picture stays flat; a radius over half the smaller side is refused, naming the limit")
    func edges() throws {
        let flat = RGBImage(width: 97, height: 61)
        for y in 0..<61 {
            for x in 0..<97 { flat.row(y)[3 * x] = 200; flat.row(y)[3 * x + 1] = 10; flat.row(y)[3 * x + 2] = 77 }
        }
        let out = try render(BoxBlur(radius: 30, power: 2), flat)
        #expect(ToneTests.maxDifference(out, flat) == 0)
        #expect(throws: FilterError.self) { try BoxBlur(radius: 31).outputSize(for: FrameSize(width: 97, height: 61)) }
        let chain = try FilterChain(parsing: "boxblur 4 | boxblur radius=2 power=3")
        #expect(chain.description == "boxblur radius=4 | boxblur radius=2 power=3")
    }
}

/// `sharpen` against libavfilter's unsharp, one channel at a time: unsharp takes no RGB, so each
/// channel of ours is compared with unsharp run on that channel as a grey picture.
@Suite struct SharpenTests {
    /// Channel `c` of `image` as a grey RGB picture (R = G = B), which libavfilter reads as gray.
    static func channel(_ c: Int, of image: RGBImage) -> RGBImage {
        let out = RGBImage(width: image.width, height: image.height)
        for y in 0..<image.height {
            let s = image.row(y), d = out.row(y)
            for x in 0..<image.width { let v = s[3 * x + c]; d[3 * x] = v; d[3 * x + 1] = v; d[3 * x + 2] = v }
        }
        return out
    }

    // Not compared: a picture shorter than about 1.5 kernel sides. At 33×17 with side 13 libavfilter's
    // unsharp gives other values than the clamped binomial it computes everywhere else; cause not found.
    @Test("sharpen equals libavfilter's unsharp on each channel to the bit: amounts, radii, odd sizes",
          arguments: [(1280, 720, 1.0, 2), (641, 359, 1.5, 3), (64, 48, -1.0, 1), (97, 61, 4.0, 6), (45, 29, 0.5, 6), (33, 17, 0.5, 3), (33, 25, 0.5, 6)])
    func matchesUnsharp(width: Int, height: Int, amount: Double, radius: Int) throws {
        let image = Images.natural(width, height)
        let ours = try render(Sharpen(amount: amount, radius: radius), image)
        let side = 2 * radius + 1
        for c in 0..<3 {
            let reference = try Oracle.libavfilter(
                "format=gray,unsharp=lx=\(side):ly=\(side):la=\(amount):cx=3:cy=3:ca=0", Self.channel(c, of: image))
            #expect(ToneTests.maxDifference(Self.channel(c, of: ours), reference) == 0, "channel \(c)")
        }
    }

    @Test("amount 0 leaves the picture; the grammar prints back")
    func identity() throws {
        let image = Images.natural(101, 57)
        #expect(ToneTests.maxDifference(try render(Sharpen(amount: 0, radius: 3), image), image) == 0)
        let chain = try FilterChain(parsing: "sharpen | sharpen 0.5 radius=4")
        #expect(chain.description == "sharpen amount=1 radius=2 | sharpen amount=0.5 radius=4")
    }
}
