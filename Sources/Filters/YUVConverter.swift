/// Packed RGB24 ↔ planar Y′CbCr 4:2:0 in pure Swift, for a given matrix and range. RGB is
/// full range (0…255), as everywhere in `Filters`.
///
/// **Chroma siting** is H.264/MPEG-2's default, “left” (`AVCHROMA_LOC_LEFT`): a chroma sample sits
/// horizontally on the even luma column and vertically half-way between two luma rows.
/// - RGB → 4:2:0: the two rows are averaged, and horizontally a [1 2 1]/4 filter centred on the even
///   column (edge columns repeated) band-limits before subsampling.
/// - 4:2:0 → RGB: bilinear reconstruction at those sites: even columns take the chroma sample, odd
///   columns the mean of its two neighbours; rows take ¾ of the nearer chroma row and ¼ of the other.
///
/// Both directions compute in `Float` and round to nearest once; results are within ±1 of an exact
/// double-precision evaluation of the same formulas. Rows are split into bands across
/// `Parallel.workerCount` cores (pairs of rows, so no chroma row is shared).
public struct YUVConverter: Hashable, Sendable {
    /// How RGB → 4:2:0 forms each chroma sample from its pixels.
    public enum ChromaDownsampling: String, Hashable, Sendable {
        /// [1 2 1]/4 across columns centred on the even column, rows averaged: H.264's left siting.
        case leftSited
        /// The mean of the 2×2 block: the exact inverse of chroma replication (libswscale's default
        /// 4:2:0 → RGB), so a decode → RGB → encode round trip keeps chroma as it was.
        case box
    }

    public var matrix: YUVMatrix
    public var range: YUVRange
    public var downsampling: ChromaDownsampling

    public init(matrix: YUVMatrix = .bt709, range: YUVRange = .limited, downsampling: ChromaDownsampling = .leftSited) {
        self.matrix = matrix
        self.range = range
        self.downsampling = downsampling
    }

    /// Y′ = yScale·(Kr R + Kg G + Kb B) + yOffset; Cb = cScale·(B − Y)/(2(1 − Kb)) + 128, Cr likewise.
    var yScale: Double { range == .limited ? 219.0 / 255.0 : 1 }
    var yOffset: Double { range == .limited ? 16 : 0 }
    var cScale: Double { range == .limited ? 224.0 / 255.0 : 1 }

    /// Rows of the forward matrix: (Y, Cb, Cr) = M · (R, G, B) + (yOffset, 128, 128).
    var forwardMatrix: [[Double]] {
        let kr = matrix.kr, kb = matrix.kb, kg = 1 - kr - kb
        let ys = yScale, cs = cScale
        return [
            [ys * kr, ys * kg, ys * kb],
            [cs * -kr / (2 * (1 - kb)), cs * -kg / (2 * (1 - kb)), cs * 0.5],
            [cs * 0.5, cs * -kg / (2 * (1 - kr)), cs * -kb / (2 * (1 - kr))],
        ]
    }

    /// R = a·(Y − yOffset) + rCr·(Cr − 128); G = a·(Y − yOffset) + gCb·(Cb − 128) + gCr·(Cr − 128); B = a·(Y − yOffset) + bCb·(Cb − 128).
    var inverseCoefficients: (a: Double, rCr: Double, gCb: Double, gCr: Double, bCb: Double) {
        let kr = matrix.kr, kb = matrix.kb, kg = 1 - kr - kb
        let a = 1 / yScale, c = 1 / cScale
        return (a, c * 2 * (1 - kr), -c * 2 * (1 - kb) * kb / kg, -c * 2 * (1 - kr) * kr / kg, c * 2 * (1 - kb))
    }

    /// The Y′, Cb, Cr samples of one RGB colour (a pad's fill, say), rounded.
    public func samples(of color: RGBColor) -> (y: UInt8, cb: UInt8, cr: UInt8) {
        let m = forwardMatrix
        let rgb = [Double(color.r), Double(color.g), Double(color.b)]
        func sample(_ row: Int, _ offset: Double) -> UInt8 {
            let value = m[row][0] * rgb[0] + m[row][1] * rgb[1] + m[row][2] * rgb[2] + offset
            return UInt8(min(max(value.rounded(), 0), 255))
        }
        return (sample(0, yOffset), sample(1, 128), sample(2, 128))
    }

    // MARK: RGB → 4:2:0

    /// Converts `yuv.width`×`yuv.height` pixels of packed RGB24 at `rgb` (rows `bytesPerRow` apart) into `yuv`.
    public func rgbToYUV420(_ rgb: UnsafePointer<UInt8>, bytesPerRow: Int, into yuv: PlanarYUV420View) {
        let m = forwardMatrix.map { $0.map(Float.init) }
        let k = YUVForwardKernel(
            yr: m[0][0], yg: m[0][1], yb: m[0][2], yo: Float(yOffset),
            ur: m[1][0] / 8, ug: m[1][1] / 8, ub: m[1][2] / 8,
            vr: m[2][0] / 8, vg: m[2][1] / 8, vb: m[2][2] / 8, box: downsampling == .box)
        let pairs = yuv.chromaHeight
        let bands = Parallel.bandCount(for: pairs, minimumPerBand: 16)
        let source = UnsafeRawPointerBox(UnsafeRawPointer(rgb))
        Parallel.forEachBand(of: pairs, bands: bands) { _, range in
            k.rowPairs(range, rgb: source.pointer.assumingMemoryBound(to: UInt8.self), rgbStride: bytesPerRow, yuv: yuv)
        }
    }

    /// Converts `image` (which must have the view's size) into `yuv`.
    public func rgbToYUV420(_ image: RGBImage, into yuv: PlanarYUV420View) {
        precondition(image.size == FrameSize(yuv.width, yuv.height), "rgbToYUV420: image \(image.size), planes \(yuv.width)x\(yuv.height)")
        rgbToYUV420(UnsafePointer(image.baseAddress), bytesPerRow: image.bytesPerRow, into: yuv)
    }

    // MARK: 4:2:0 → RGB

    /// Converts `yuv` into packed RGB24 at `rgb` (rows `bytesPerRow` apart, at least 3·width bytes each).
    public func yuv420ToRGB(_ yuv: PlanarYUV420View, into rgb: UnsafeMutablePointer<UInt8>, bytesPerRow: Int) {
        let c = inverseCoefficients
        let k = YUVInverseKernel(a: Float(c.a), yo: Float(yOffset), rCr: Float(c.rCr), gCb: Float(c.gCb),
                                 gCr: Float(c.gCr), bCb: Float(c.bCb))
        let pairs = yuv.chromaHeight
        let bands = Parallel.bandCount(for: pairs, minimumPerBand: 16)
        let destination = UnsafeRawPointerBox(UnsafeRawPointer(rgb))
        let chromaRow = yuv.chromaWidth + 16
        Parallel.forEachBand(of: pairs, bands: bands) { _, range in
            // Four chroma rows (Cb, Cr for the upper and lower luma row) of floats, plus slack for 8-wide reads.
            withUnsafeTemporaryAllocation(of: Float.self, capacity: 4 * chromaRow) { scratch in
                k.rowPairs(range, yuv: yuv, rgb: UnsafeMutablePointer(mutating: destination.pointer.assumingMemoryBound(to: UInt8.self)),
                           rgbStride: bytesPerRow, scratch: scratch.baseAddress!, scratchRow: chromaRow)
            }
        }
    }

    /// Converts `yuv` into `image`, which must have the view's size.
    public func yuv420ToRGB(_ yuv: PlanarYUV420View, into image: RGBImage) {
        precondition(image.size == FrameSize(yuv.width, yuv.height), "yuv420ToRGB: image \(image.size), planes \(yuv.width)x\(yuv.height)")
        yuv420ToRGB(yuv, into: image.baseAddress, bytesPerRow: image.bytesPerRow)
    }
}
