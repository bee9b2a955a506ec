import CFFmpeg
import FilterReferences
import Filters
import Testing

@Suite struct ScaleTests {
    static let cases: [(Scale.Method, Int32)] = [
        (.bilinear, Int32(SWS_BILINEAR)), (.bicubic, Int32(SWS_BICUBIC)), (.area, Int32(SWS_AREA)),
    ]

    @Test(arguments: [FrameSize(1280, 720), FrameSize(640, 360)], [0, 1, 2])
    func matchesLibswscale(size: FrameSize, methodIndex: Int) throws {
        let (method, flags) = Self.cases[methodIndex]
        let image = Images.natural(1920, 1080)
        let ours = try render(Scale(.exact(size), method: method), image)
        let reference = try Oracle.libswscale(image, to: size, flags: flags)
        let quality = psnr(ours, reference)
        #expect(quality >= 38, "\(method) → \(size): PSNR \(quality) dB")
    }

    @Test func upscaleMatchesLibswscale() throws {
        let image = Images.natural(641, 359)
        let size = FrameSize(1000, 561)
        for (method, flags) in Self.cases where method != .area {
            let quality = psnr(try render(Scale(.exact(size), method: method), image),
                               try Oracle.libswscale(image, to: size, flags: flags))
            #expect(quality >= 38, "\(method) upscale: PSNR \(quality) dB")
        }
    }

    /// A 1-pixel black/white checkerboard shrunk 4× must come out flat grey: every channel of every
    /// pixel within ±1 of 127.5 (the exact mean), borders included.
    @Test(arguments: Scale.Method.allCases)
    func checkerboardDownscaleIsFlatGrey(method: Scale.Method) throws {
        let board = SyntheticImage.checkerboard(width: 640, height: 360)
        let small = try render(Scale(.exact(FrameSize(160, 90)), method: method), board)
        let worst = small.packedBytes().map { abs(Double($0) - 127.5) }.max()!
        #expect(worst <= 1, "\(method): worst deviation \(worst)")
    }

    @Test func sizeArithmetic() throws {
        let hd = FrameSize(1920, 1080)
        #expect(try Scale(.fit(FrameSize(1280, 1280))).outputSize(for: hd) == FrameSize(1280, 720))
        #expect(try Scale(.fit(FrameSize(1000, 200))).outputSize(for: hd) == FrameSize(356, 200))
        #expect(try Scale(.fit(FrameSize(3840, 3840))).outputSize(for: hd) == FrameSize(3840, 2160))
        #expect(try Scale(.width(640)).outputSize(for: hd) == FrameSize(640, 360))
        #expect(try Scale(.height(361)).outputSize(for: hd) == FrameSize(642, 361))  // 641.78 → 642
        #expect(try Scale(.max(1280)).outputSize(for: hd) == FrameSize(1280, 720))
        #expect(try Scale(.max(1280)).outputSize(for: FrameSize(1080, 1920)) == FrameSize(720, 1280))
        #expect(try Scale(.max(4000)).outputSize(for: hd) == hd)  // never upscales
        #expect(try Scale(.width(1)).outputSize(for: FrameSize(1000, 10)) == FrameSize(1, 1))  // never 0
        #expect(throws: FilterError.self) { try Scale(.width(0)).outputSize(for: hd) }
    }

    @Test func sameSizeIsIdentity() throws {
        let image = Images.natural(641, 359)
        #expect(try render(Scale(.exact(image.size)), image).packedBytes() == image.packedBytes())
    }
}
