/// Mosaic: the picture in N×N blocks from the top-left corner, each the mean of its pixels (partial
/// blocks at the right and bottom edges take the mean of the pixels they have). ffmpeg's `pixelize`
/// with `w=h=N`, except that means are rounded to nearest where pixelize truncates.
public struct Pixelate: Filter, Hashable {
    public enum Parameters {
        public static let size = NumericParameter<Int>("size", in: 2...512, summary: "block side in pixels")
    }

    @available(*, deprecated, renamed: "Parameters.size.range") public static var sizeRange: ClosedRange<Int> { Parameters.size.range }

    public var size: Int

    public init(size: Int) {
        self.size = size
    }

    public var description: String { "pixelate size=\(size)" }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        try Parameters.size.check(size, filter: description)
        return input
    }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        PixelateRenderer(size: try outputSize(for: input), block: size, channels: 3)
    }
}

/// Block means of `channels`-sample pixels, for the RGB picture (3) and for one plane (1).
private struct PixelateKernel: Sendable {
    let width: Int, height: Int, block: Int, channels: Int
    var blocksAcross: Int { (width + block - 1) / block }
    var blockRows: Int { (height + block - 1) / block }

    /// Block rows `blockRows` of `source` (rows `sourceStride` apart) into `destination`, with
    /// `sum` room for one running sum per block and channel, then one per column.
    func run(_ blockRowRange: Range<Int>, source: UnsafePointer<UInt8>, sourceStride: Int,
             destination: UnsafeMutablePointer<UInt8>, destinationStride: Int, sum: UnsafeMutablePointer<UInt32>) {
        let across = blocksAcross, c = channels
        for blockRow in blockRowRange {
            let top = blockRow * block, rows = min(block, height - top)
            sum.update(repeating: 0, count: across * c)
            if c == 1 {
                // One plane: sum the block row's rows per column first (a contiguous loop the
                // compiler vectorizes), then each block's columns once.
                let columnSums = sum + across
                columnSums.update(repeating: 0, count: width)
                for y in top..<(top + rows) {
                    let s = source + y * sourceStride
                    for x in 0..<width { columnSums[x] &+= UInt32(s[x]) }
                }
                for b in 0..<across {
                    let left = b * block, columns = min(block, width - left)
                    var total: UInt32 = 0
                    for x in left..<(left + columns) { total &+= columnSums[x] }
                    let mean = UInt8((total + UInt32(columns * rows) / 2) / UInt32(columns * rows))
                    for y in top..<(top + rows) { (destination + y * destinationStride + left).update(repeating: mean, count: columns) }
                }
                continue
            }
            for y in top..<(top + rows) {
                let s = source + y * sourceStride
                for b in 0..<across {
                    let left = b * block, columns = min(block, width - left)
                    var p = s + c * left
                    if c == 3 {
                        var (r, g, bl): (UInt32, UInt32, UInt32) = (0, 0, 0)
                        for _ in 0..<columns {
                            r &+= UInt32(p[0]); g &+= UInt32(p[1]); bl &+= UInt32(p[2])
                            p += 3
                        }
                        sum[3 * b] &+= r; sum[3 * b + 1] &+= g; sum[3 * b + 2] &+= bl
                    } else {
                        for k in 0..<c {
                            var total: UInt32 = 0
                            var q = p + k
                            for _ in 0..<columns { total &+= UInt32(q[0]); q += c }
                            sum[c * b + k] &+= total
                        }
                    }
                }
            }
            for b in 0..<across {
                let left = b * block, columns = min(block, width - left)
                let count = UInt32(columns * rows)
                if c == 3 {
                    let r = UInt8((sum[3 * b] + count / 2) / count)
                    let g = UInt8((sum[3 * b + 1] + count / 2) / count)
                    let bl = UInt8((sum[3 * b + 2] + count / 2) / count)
                    for y in top..<(top + rows) {
                        var d = destination + y * destinationStride + 3 * left
                        for _ in 0..<columns {
                            d[0] = r; d[1] = g; d[2] = bl
                            d += 3
                        }
                    }
                    continue
                }
                for k in 0..<c {
                    let mean = UInt8((sum[c * b + k] + count / 2) / count)
                    for y in top..<(top + rows) {
                        var d = destination + y * destinationStride + c * left + k
                        for _ in 0..<columns { d[0] = mean; d += c }
                    }
                }
            }
        }
    }
}

/// Runs a `PixelateKernel` in bands of block rows, each band with its own sums.
private final class PixelateBands: @unchecked Sendable {
    let kernel: PixelateKernel
    let bands: Int
    /// Per band: a running sum per block and channel, and one per column (allocated once, here).
    let sums: ScratchBuffer<UInt32>

    init(_ kernel: PixelateKernel) {
        self.kernel = kernel
        bands = Parallel.bandCount(for: kernel.blockRows, minimumPerBand: max(1, 64 / kernel.block))
        sums = ScratchBuffer(count: bands * (kernel.blocksAcross * kernel.channels + kernel.width), zero: 0)
    }

    func run(_ source: UnsafePointer<UInt8>, sourceStride: Int, into destination: UnsafeMutablePointer<UInt8>, destinationStride: Int) {
        let kernel = kernel, sums = sums, perBand = kernel.blocksAcross * kernel.channels + kernel.width
        let src = UnsafeRawPointerBox(UnsafeRawPointer(source)), dst = UnsafeRawPointerBox(UnsafeRawPointer(destination))
        Parallel.forEachBand(of: kernel.blockRows, bands: bands) { band, range in
            kernel.run(range, source: src.pointer.assumingMemoryBound(to: UInt8.self), sourceStride: sourceStride,
                       destination: UnsafeMutablePointer(mutating: dst.pointer.assumingMemoryBound(to: UInt8.self)),
                       destinationStride: destinationStride, sum: sums.base + band * perBand)
        }
    }
}

/// The mosaic of an RGB picture (3 channels) or of one plane (1 channel).
private final class PixelateRenderer: FilterRenderer, PlaneRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let bands: PixelateBands

    init(size: FrameSize, block: Int, channels: Int) {
        inputSize = size
        bands = PixelateBands(PixelateKernel(width: size.width, height: size.height, block: block, channels: channels))
    }

    func render(_ source: RGBImage, into destination: RGBImage) {
        bands.run(source.baseAddress, sourceStride: source.bytesPerRow, into: destination.baseAddress, destinationStride: destination.bytesPerRow)
    }

    func render(_ source: Plane, into destination: Plane) {
        bands.run(source.base, sourceStride: source.stride, into: destination.base, destinationStride: destination.stride)
    }
}

// A block mean is a weighted sum with weights adding up to one, so it commutes with Y′CbCr ↔ RGB.
// With an even block and picture, a chroma plane's blocks are the picture's halved: the planes'
// means are the picture's.
extension Pixelate: PlanarFilter {
    public func acceptsPlanes(of picture: FrameSize) -> Bool {
        size % 2 == 0 && picture.width % 2 == 0 && picture.height % 2 == 0 && Parameters.size.range.contains(size)
    }

    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        guard acceptsPlanes(of: picture) else { return nil }
        return PixelateRenderer(size: picture.shifted(by: role.shift), block: size >> role.shift, channels: 1)
    }
}
