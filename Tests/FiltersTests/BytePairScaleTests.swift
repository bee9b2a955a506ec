@_spi(Testing) import Filters
import Testing

/// Built for AVX2, the plane scaler multiplies the taps' bytes in pairs (PMADDUBSW), which
/// saturates where sixteen-bit lanes would wrap; it pairs taps only where no sum can reach that.
/// Either way its bytes must be those of the sixteen-bit loop, on natural pictures and on the
/// worst case for the pair sums (0 and 255 side by side, and noise).
struct BytePairScaleTests {
    enum Content: CaseIterable { case natural, extremes, noise }

    static func plane(_ size: FrameSize, _ content: Content) -> [UInt8] {
        switch content {
        case .natural:
            let image = SyntheticImage.natural(width: size.width, height: size.height, seed: 11)
            return (0..<size.height).flatMap { y in (0..<size.width).map { x in image[x, y].g } }
        case .extremes:
            // Stripes and a checkerboard of 0 and 255: every tap pair meets both extremes.
            return (0..<size.height).flatMap { y in (0..<size.width).map { x in ((x / 2 + y / 3) & 1 == 0) != (x % 7 < 3) ? 255 : 0 } }
        case .noise:
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            return (0..<size.width * size.height).map { _ in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return UInt8(truncatingIfNeeded: state >> 56)
            }
        }
    }

    static func scaled(_ samples: [UInt8], _ from: FrameSize, by scaler: PlaneScaler) -> [UInt8] {
        var source = samples, out = [UInt8](repeating: 0, count: scaler.outputSize.width * scaler.outputSize.height)
        source.withUnsafeMutableBufferPointer { s in
            out.withUnsafeMutableBufferPointer { d in
                scaler.render(Plane(base: s.baseAddress!, width: from.width, height: from.height, stride: from.width),
                              into: Plane(base: d.baseAddress!, width: scaler.outputSize.width, height: scaler.outputSize.height,
                                          stride: scaler.outputSize.width))
            }
        }
        return out
    }

    /// (from, to, method, whether both passes should pair their taps on an AVX2 build).
    static let cases: [(FrameSize, FrameSize, Scale.Method, Bool)] = [
        (FrameSize(1920, 1080), FrameSize(1280, 720), .bicubic, true),    // 6 taps: 3 pairs
        (FrameSize(960, 540), FrameSize(640, 360), .bicubic, true),
        (FrameSize(1920, 1080), FrameSize(1366, 768), .bicubic, true),    // aperiodic phases
        (FrameSize(1920, 1080), FrameSize(1080, 608), .bicubic, true),    // 8 taps: 4 pairs
        (FrameSize(1920, 1080), FrameSize(720, 405), .bicubic, true),     // 11 taps: an odd one out, 6 pairs
        (FrameSize(1917, 1079), FrameSize(1001, 563), .bicubic, true),    // ragged rows: the last samples one by one
        (FrameSize(333, 211), FrameSize(101, 67), .bicubic, true),
        (FrameSize(1280, 720), FrameSize(1920, 1080), .bicubic, true),    // upscale: 4 taps
        (FrameSize(1920, 1080), FrameSize(1000, 562), .bilinear, false),  // weights past a byte: the sixteen-bit loop
        (FrameSize(1920, 1080), FrameSize(960, 540), .area, false),
    ]

    @Test(arguments: 0..<cases.count)
    func bytePairsGiveTheSixteenBitBytes(_ index: Int) throws {
        let (from, to, method, pairs) = Self.cases[index]
        let paired = try #require(PlaneScaler(method: method, inputSize: from, outputSize: to))
        let plain = try #require(PlaneScaler(method: method, inputSize: from, outputSize: to, bytePairs: false))
        #expect(plain.bytePairs == (false, false))
        if PlaneScaler.bytePairsAvailable && pairs { #expect(paired.bytePairs == (true, true), "\(from) → \(to) \(method)") }
        for content in Content.allCases {
            let samples = Self.plane(from, content)
            let a = Self.scaled(samples, from, by: paired), b = Self.scaled(samples, from, by: plain)
            if let first = zip(a, b).enumerated().first(where: { $0.element.0 != $0.element.1 }) {
                Issue.record("\(from) → \(to) \(method), \(content): sample \(first.offset) is \(first.element.0) paired, \(first.element.1) in sixteen bits")
            }
        }
    }
}
