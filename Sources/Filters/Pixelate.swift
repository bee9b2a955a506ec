/// Mosaic: the picture in N×N blocks from the top-left corner, each the mean of its pixels (partial
/// blocks at the right and bottom edges take the mean of the pixels they have). ffmpeg's `pixelize`
/// with `w=h=N`, except that means are rounded to nearest where pixelize truncates.
public struct Pixelate: Filter, Hashable {
    public static let sizeRange = 2...512

    public var size: Int

    public init(size: Int) {
        self.size = size
    }

    public var description: String { "pixelate size=\(size)" }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize { input }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        guard Self.sizeRange.contains(size) else {
            throw .invalidGeometry(filter: description, reason: "the block size must be \(Self.sizeRange.lowerBound)…\(Self.sizeRange.upperBound)")
        }
        return PixelateRenderer(size: input, block: size)
    }
}

private final class PixelateRenderer: FilterRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let block: Int
    private let blocksAcross: Int
    private let blockRows: Int
    private let bands: Int
    /// Per band: a running sum per block and channel (allocated once, here).
    private let sums: ScratchBuffer<UInt32>

    init(size: FrameSize, block: Int) {
        inputSize = size
        self.block = block
        blocksAcross = (size.width + block - 1) / block
        blockRows = (size.height + block - 1) / block
        bands = Parallel.bandCount(for: blockRows, minimumPerBand: max(1, 64 / block))
        sums = ScratchBuffer(count: bands * blocksAcross * 3, zero: 0)
    }

    func render(_ source: RGBImage, into destination: RGBImage) {
        let (width, height, block, across) = (inputSize.width, inputSize.height, block, blocksAcross)
        let sums = sums
        Parallel.forEachBand(of: blockRows, bands: bands) { band, blockRowRange in
            let sum = sums.base + band * across * 3
            for blockRow in blockRowRange {
                let top = blockRow * block, rows = min(block, height - top)
                sum.update(repeating: 0, count: across * 3)
                for y in top..<(top + rows) {
                    let s = source.row(y)
                    for b in 0..<across {
                        let left = b * block, columns = min(block, width - left)
                        var (r, g, bl): (UInt32, UInt32, UInt32) = (0, 0, 0)
                        var p = s + 3 * left
                        for _ in 0..<columns {
                            r &+= UInt32(p[0]); g &+= UInt32(p[1]); bl &+= UInt32(p[2])
                            p += 3
                        }
                        sum[3 * b] &+= r; sum[3 * b + 1] &+= g; sum[3 * b + 2] &+= bl
                    }
                }
                for b in 0..<across {
                    let left = b * block, columns = min(block, width - left)
                    let count = UInt32(columns * rows)
                    let r = UInt8((sum[3 * b] + count / 2) / count)
                    let g = UInt8((sum[3 * b + 1] + count / 2) / count)
                    let bl = UInt8((sum[3 * b + 2] + count / 2) / count)
                    for y in top..<(top + rows) {
                        var d = destination.row(y) + 3 * left
                        for _ in 0..<columns {
                            d[0] = r; d[1] = g; d[2] = bl
                            d += 3
                        }
                    }
                }
            }
        }
    }
}
