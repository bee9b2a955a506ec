import Filters
import Testing

/// `invert` and `grayscale` against libavfilter's filters of the same job, on natural pictures.
@Suite struct ToneTests {
    /// The largest difference of any channel of any pixel.
    static func maxDifference(_ a: RGBImage, _ b: RGBImage) -> Int {
        var worst = 0
        for y in 0..<a.height {
            let p = a.row(y), q = b.row(y)
            for x in 0..<(a.width * 3) { worst = max(worst, abs(Int(p[x]) - Int(q[x]))) }
        }
        return worst
    }

    @Test("invert equals libavfilter's negate exactly, at an odd size too", arguments: [(1280, 720), (641, 359)])
    func invertMatchesNegate(width: Int, height: Int) throws {
        let image = Images.natural(width, height)
        let ours = try render(Invert(), image)
        let reference = try Oracle.libavfilter("negate", image)
        #expect(Self.maxDifference(ours, reference) == 0)
        #expect(Self.maxDifference(try render(Invert(), ours), image) == 0, "twice is the picture again")
    }

    @Test("grayscale bt601 equals libavfilter's format=gray within 1 (its rounding), R = G = B")
    func grayscaleMatchesFormatGray() throws {
        let image = Images.natural(1280, 720)
        let ours = try render(Grayscale(matrix: .bt601), image)
        let reference = try Oracle.libavfilter("format=gray", image)
        #expect(Self.maxDifference(ours, reference) <= 1)
        for y in stride(from: 0, to: ours.height, by: 37) {
            for x in stride(from: 0, to: ours.width, by: 41) {
                let p = ours[x, y]
                #expect(p.r == p.g && p.g == p.b)
            }
        }
    }

    @Test("grayscale bt709 is the rounded double-precision luma; grey and white stay as they are")
    func grayscaleBT709() throws {
        let image = Images.natural(641, 359)
        let ours = try render(Grayscale(), image)
        var worst = 0.0
        for y in 0..<image.height {
            for x in 0..<image.width {
                let s = image[x, y]
                let luma = 0.2126 * Double(s.r) + 0.7152 * Double(s.g) + 0.0722 * Double(s.b)
                worst = max(worst, abs(Double(ours[x, y].r) - luma))
            }
        }
        #expect(worst <= 0.51, "worst \(worst)")
        let grey = RGBImage(width: 64, height: 8)
        for v in [0, 1, 127, 128, 254, 255] {
            grey.fill(r: UInt8(v), g: UInt8(v), b: UInt8(v))
            let out = try render(Grayscale(), grey)
            #expect(out[10, 3].r == UInt8(v) && out[10, 3].b == UInt8(v), "grey \(v)")
            #expect(try render(Grayscale(matrix: .bt601), grey)[63, 7].g == UInt8(v))
        }
    }

    @Test("pixelate is libavfilter's pixelize within 1 (it truncates means, we round), edge blocks included",
          arguments: [(1280, 720, 16), (641, 359, 24), (64, 48, 2)])
    func pixelateMatchesPixelize(width: Int, height: Int, size: Int) throws {
        let image = Images.natural(width, height)
        let ours = try render(Pixelate(size: size), image)
        let reference = try Oracle.libavfilter("pixelize=w=\(size):h=\(size)", image)
        #expect(Self.maxDifference(ours, reference) <= 1)
        // Every block is flat.
        for y in stride(from: 0, to: height, by: size) {
            for x in stride(from: 0, to: width, by: size) {
                let corner = ours[x, y], far = ours[min(width - 1, x + size - 1), min(height - 1, y + size - 1)]
                #expect(corner == far, "block at \(x),\(y)")
            }
        }
    }

    @Test("the grammar: invert and grayscale parse and print back")
    func grammar() throws {
        let chain = try FilterChain(parsing: "invert | grayscale bt601 | grayscale | pixelate 12")
        #expect(chain.description == "invert | grayscale bt601 | grayscale | pixelate size=12")
        #expect(try FilterChain(parsing: chain.description).description == chain.description)
    }
}
