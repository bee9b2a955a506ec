/// The photographic negative: every channel becomes 255 − value (ffmpeg's `negate`).
public struct Invert: Filter, Hashable {
    public init() {}

    public var description: String { "invert" }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize { input }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        InvertRenderer(size: input)
    }
}

private final class InvertRenderer: FilterRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let bands: Int

    init(size: FrameSize) {
        inputSize = size
        bands = Parallel.bandCount(for: size.height, minimumPerBand: 64)
    }

    func render(_ source: RGBImage, into destination: RGBImage) {
        let rowBytes = inputSize.width * RGBImage.bytesPerPixel
        Parallel.forEachBand(of: inputSize.height, bands: bands) { _, rows in
            for y in rows {
                let s = source.row(y), d = destination.row(y)
                var x = 0
                // 32 bytes a step as four 64-bit words (SIMD32<UInt8>'s `~` compiled lane by lane:
                // 43 ms a 1080p frame, against 1 ms like this); the tail byte by byte.
                while x + 32 <= rowBytes {
                    let p = UnsafeRawPointer(s + x), q = UnsafeMutableRawPointer(d + x)
                    q.storeBytes(of: ~p.loadUnaligned(as: UInt64.self), as: UInt64.self)
                    q.storeBytes(of: ~p.loadUnaligned(fromByteOffset: 8, as: UInt64.self), toByteOffset: 8, as: UInt64.self)
                    q.storeBytes(of: ~p.loadUnaligned(fromByteOffset: 16, as: UInt64.self), toByteOffset: 16, as: UInt64.self)
                    q.storeBytes(of: ~p.loadUnaligned(fromByteOffset: 24, as: UInt64.self), toByteOffset: 24, as: UInt64.self)
                    x += 32
                }
                while x < rowBytes {
                    d[x] = ~s[x]
                    x += 1
                }
            }
        }
    }
}

// 255 − value on every channel is affine per pixel, and Y′CbCr is an affine map of RGB, so on the
// planes it is one too: Y′ → 2·offset + Kʏ·(255, 255, 255) − Y′ (251 − Y′ in limited range) and
// C → 256 − C (a chroma row of the matrix sums to zero). A table per plane.
extension Invert: PlanarFilter {
    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        let row = color.forwardMatrix[role.rawValue]
        let offset = role == .luma ? color.yOffset : 128
        let mirror = 2 * offset + 255 * (row[0] + row[1] + row[2])
        let table = (0..<256).map { UInt8(min(255, max(0, (mirror - Double($0)).rounded()))) }
        return PlaneOperationRenderer(size: picture.shifted(by: role.shift), operation: .table(table))
    }
}
