import Filters
import Foundation
import Testing

/// `fade` and `eq` against libavfilter's filters of the same name.
@Suite struct ColourTests {
    static func maxDifference(_ a: RGBImage, _ b: RGBImage) -> Int { ToneTests.maxDifference(a, b) }

    static func render(_ text: String, _ image: RGBImage, at seconds: Double) throws -> RGBImage {
        try TimelineTests.render(text, image, at: seconds)
    }

    // MARK: fade

    @Test("fade in/out equals libavfilter's fade with st= and d= on rgb24 to the bit, at 30 fps tick times, black and a colour",
          arguments: [("fade in=1,2", "fade=t=in:st=1:d=2"),
                      ("fade out=0.5,1.5 color=#FF8020", "fade=t=out:st=0.5:d=1.5:color=0xFF8020"),
                      ("fade in=0,0.7 color=#FFFFFF", "fade=t=in:st=0:d=0.7:color=white")])
    func fadeMatchesLibavfilter(ours: String, theirs: String) throws {
        let image = Images.natural(321, 181)
        for tick in [0, 1, 14, 15, 29, 30, 31, 45, 59, 60, 61, 89, 90, 91, 120] {
            let reference = try Oracle.libavfilter(theirs, image, pts: Int64(tick), timeBase: "1/30")
            let out = try Self.render(ours, image, at: Double(tick) / 30)
            #expect(Self.maxDifference(out, reference) == 0, "\(ours) at tick \(tick)")
        }
    }

    @Test("fade in and out in one filter: the colour, the picture in between, the colour again")
    func fadeInAndOut() throws {
        let image = Images.natural(64, 36)
        let black = RGBImage(size: image.size)
        #expect(Self.maxDifference(try Self.render("fade in=0,1 out=9,1", image, at: 0), black) == 0)
        #expect(Self.maxDifference(try Self.render("fade in=0,1 out=9,1", image, at: 5), image) == 0)
        #expect(Self.maxDifference(try Self.render("fade in=0,1 out=9,1", image, at: 10), black) == 0)
        #expect(throws: ChainSyntaxError.self) { try FilterChain(parsing: "fade") }
        #expect(throws: ChainSyntaxError.self) { try FilterChain(parsing: "fade in=1") }
        #expect(throws: ChainSyntaxError.self) { try FilterChain(parsing: "fade in=1,0") }
    }

    // MARK: eq

    static let settings = ["brightness=0.1", "brightness=-0.2 contrast=1.3", "contrast=0.6", "saturation=1.6",
                           "saturation=0", "gamma=1.8", "gamma=0.6 contrast=1.1 brightness=0.05 saturation=0.7",
                           "contrast=12"]

    /// A 4:2:0 picture from a natural image: BT.709 limited range.
    static func planes(_ image: RGBImage) -> Oracle.YUV420 {
        var out = Oracle.YUV420(width: image.width, height: image.height, y: [], u: [], v: [])
        out.y = [UInt8](repeating: 0, count: image.width * image.height)
        out.u = [UInt8](repeating: 0, count: out.chromaWidth * out.chromaHeight)
        out.v = out.u
        out.y.withUnsafeMutableBufferPointer { y in
            out.u.withUnsafeMutableBufferPointer { u in
                out.v.withUnsafeMutableBufferPointer { v in
                    let view = PlanarYUV420View(width: image.width, height: image.height, y: y.baseAddress!, yStride: image.width,
                                                u: u.baseAddress!, uStride: (image.width + 1) / 2,
                                                v: v.baseAddress!, vStride: (image.width + 1) / 2)
                    YUVConverter(matrix: .bt709, range: .limited).rgbToYUV420(image, into: view)
                }
            }
        }
        return out
    }

    @Test("eq on the decoded planes is libavfilter's eq to the bit (its fixed-point path and its table path)", arguments: settings)
    func planarEqMatchesLibavfilter(setting: String) throws {
        let picture = Self.planes(Images.natural(320, 180))
        let reference = try Oracle.libavfilter("eq=" + setting.replacingOccurrences(of: " ", with: ":"), picture)
        let renderer = try #require(PlanarChainRenderer(chain: try FilterChain(parsing: "eq " + setting), inputSize: FrameSize(320, 180),
                                                        color: YUVConverter(matrix: .bt709, range: .limited)))
        var out = picture
        out.y.withUnsafeMutableBufferPointer { y in
            out.u.withUnsafeMutableBufferPointer { u in
                out.v.withUnsafeMutableBufferPointer { v in
                    var input = picture
                    input.y.withUnsafeMutableBufferPointer { iy in
                        input.u.withUnsafeMutableBufferPointer { iu in
                            input.v.withUnsafeMutableBufferPointer { iv in
                                renderer.render(PlanarYUV420View(width: 320, height: 180, y: iy.baseAddress!, yStride: 320,
                                                                 u: iu.baseAddress!, uStride: 160, v: iv.baseAddress!, vStride: 160),
                                                into: PlanarYUV420View(width: 320, height: 180, y: y.baseAddress!, yStride: 320,
                                                                       u: u.baseAddress!, uStride: 160, v: v.baseAddress!, vStride: 160))
                            }
                        }
                    }
                }
            }
        }
        func mismatches(_ ours: [UInt8], _ theirs: [UInt8], _ input: [UInt8]) -> String {
            var seen: [String] = []
            for i in ours.indices where ours[i] != theirs[i] && seen.count < 8 { seen.append("\(input[i]) → \(ours[i]) vs \(theirs[i])") }
            return seen.joined(separator: ", ")
        }
        // Booleans, not arrays, in the expectations: a failure prints the first differing samples.
        let lumaEqual = out.y == reference.y, chromaEqual = out.u == reference.u && out.v == reference.v, changed = out != picture
        #expect(lumaEqual, "luma: \(mismatches(out.y, reference.y, picture.y))")
        #expect(chromaEqual, "chroma: \(mismatches(out.u, reference.u, picture.u))")
        #expect(changed, "eq \(setting) changed nothing")
    }

    @Test("eq on RGB: libavfilter's eq between BT.709 limited-range conversions, ≥ 45 dB, within 3 + 3 × max(1, contrast, saturation) levels; neutral is exact",
          arguments: settings)
    func rgbEqMatchesLibavfilter(setting: String) throws {
        let image = Images.natural(320, 180)
        let graph = "scale=out_color_matrix=bt709:out_range=tv:flags=accurate_rnd+full_chroma_int,format=yuv444p,eq="
            + setting.replacingOccurrences(of: " ", with: ":")
            + ",scale=in_color_matrix=bt709:in_range=tv:flags=accurate_rnd+full_chroma_int"
        let reference = try Oracle.libavfilter(graph, image)
        let roundTrip = try Oracle.libavfilter("scale=out_color_matrix=bt709:out_range=tv:flags=accurate_rnd+full_chroma_int,format=yuv444p,scale=in_color_matrix=bt709:in_range=tv:flags=accurate_rnd+full_chroma_int", image)
        let ours = try FiltersTests.render(try #require(FilterChain(parsing: "eq " + setting).filters.first), image)
        let db = TimelineTests.psnr(ours, reference, in: PixelRect(x: 0, y: 0, width: 320, height: 180))
        let conversions = TimelineTests.psnr(roundTrip, image, in: PixelRect(x: 0, y: 0, width: 320, height: 180))
        #expect(db >= 45, "eq \(setting): \(db) dB (the conversions alone: \(conversions) dB)")
        // A level of conversion rounding before eq is multiplied by its contrast or its saturation.
        let eq = try #require(try FilterChain(parsing: "eq " + setting).filters.first as? Eq)
        let bound = 3 + Int((3 * max(1, abs(eq.contrast), eq.saturation)).rounded(.up))
        let worst = Self.maxDifference(ours, reference)
        #expect(worst <= bound, "eq \(setting): \(worst) levels")
        print("eq \(setting) on RGB vs libavfilter: \(String(format: "%.1f", db)) dB, worst \(worst) levels; conversions alone \(String(format: "%.1f", conversions)) dB")
        #expect(Self.maxDifference(try FiltersTests.render(Eq(), image), image) == 0)
    }
}
