import FilterReferences
import Filters
import Testing

@Suite struct BlurTests {
    @Test(arguments: [0.5, 2, 6, 30, 100])
    func matchesExactGaussian(sigma: Double) throws {
        let image = Images.natural(1920, 1080)
        let fast = try render(GaussianBlur(sigma: sigma), image)
        let exact = Oracle.gaussianBlur(image, sigma: sigma)
        let quality = psnr(fast, exact)
        #expect(quality >= 45, "sigma \(sigma): PSNR \(quality) dB")
    }

    @Test(arguments: [0.3, 1, 2.5, 3, 12, 100])
    func constantImageStaysExactlyConstant(sigma: Double) throws {
        let image = RGBImage(width: 203, height: 117)
        image.fill(r: 200, g: 37, b: 255)
        let blurred = try render(GaussianBlur(sigma: sigma), image)
        #expect(blurred.packedBytes() == image.packedBytes())
    }

    /// Tiny and thin pictures (smaller than one decimation block) stay exactly constant.
    @Test(arguments: [FrameSize(1, 1), FrameSize(2, 3), FrameSize(5, 1), FrameSize(1, 9), FrameSize(67, 2)])
    func tinyPicturesStayConstant(size: FrameSize) throws {
        for sigma in [0.5, 2, 6, 30, 100] {
            let image = RGBImage(size: size)
            image.fill(r: 3, g: 128, b: 251)
            let blurred = try render(GaussianBlur(sigma: sigma), image)
            #expect(blurred.packedBytes() == image.packedBytes(), "\(size) sigma \(sigma)")
        }
    }

    @Test(arguments: [1.5, 8, 30])
    func regionBlurLeavesOutsideIdenticalAndMatchesCroppedBlur(sigma: Double) throws {
        let image = Images.natural(641, 359)
        let region = PixelRect(x: 37, y: 21, width: 300, height: 151)
        let blurred = try render(GaussianBlur(sigma: sigma, region: region), image)
        var outsideSame = true
        for y in 0..<image.height {
            for x in 0..<image.width where !(x >= region.x && x < region.x + region.width && y >= region.y && y < region.y + region.height) {
                if blurred[x, y] != image[x, y] { outsideSame = false }
            }
        }
        #expect(outsideSame)
        // Inside: the region is blurred on its own, samples clamped to the region.
        let inside = try render(Crop(width: region.width, height: region.height, x: region.x, y: region.y), blurred)
        let reference = Oracle.gaussianBlur(try render(Crop(width: region.width, height: region.height, x: region.x, y: region.y), image), sigma: sigma)
        #expect(psnr(inside, reference) >= 45)
    }

    @Test func invalidSigmaAndRegionAreRejected() {
        #expect(throws: FilterError.self) { try GaussianBlur(sigma: -0.1).outputSize(for: FrameSize(64, 64)) }
        #expect((try? GaussianBlur(sigma: 0).outputSize(for: FrameSize(64, 64))) == FrameSize(64, 64), "sigma 0 is no blur")
        let image = Images.natural(64, 48)
        #expect((try? render(GaussianBlur(sigma: 0), image))?.packedBytes() == image.packedBytes(), "sigma 0 leaves the picture")
        #expect(throws: FilterError.self) { try GaussianBlur(sigma: 101).outputSize(for: FrameSize(64, 64)) }
        #expect(throws: FilterError.self) {
            try GaussianBlur(sigma: 2, region: PixelRect(x: 60, y: 0, width: 10, height: 10)).outputSize(for: FrameSize(64, 64))
        }
    }
}
