/// A chain that only moves pixels (mirrors and quarter turns) as one exact move that can run on
/// each plane of a planar picture (Y, Cb, Cr of 4:2:0) — no colour conversion, bit-exact.
/// The pipeline uses it to skip the RGB round trip for orientation fixes.
public struct PlanarMove: Sendable, Equatable {
    let transform: D4Transform

    /// Whether the move leaves the picture as it is.
    public var isIdentity: Bool { transform.isIdentity }

    public func outputSize(for input: FrameSize) -> FrameSize { transform.outputSize(for: input) }

    /// Moves a `size` plane of one-byte samples from `source` (rows `sourceStride` apart) into
    /// `destination` (rows `destinationStride` apart, sized `outputSize(for: size)`).
    public func apply(_ source: UnsafePointer<UInt8>, sourceStride: Int, size: FrameSize,
                      into destination: UnsafeMutablePointer<UInt8>, destinationStride: Int) {
        let t = transform
        let w = size.width, h = size.height
        // Source offset of destination sample (u, v) is origin + u * du + v * dv.
        let origin = (t.flipsX ? w - 1 : 0) + (t.flipsY ? (h - 1) * sourceStride : 0)
        let stepX = t.flipsX ? -1 : 1
        let stepY = t.flipsY ? -sourceStride : sourceStride
        let du = t.transposes ? stepY : stepX
        let dv = t.transposes ? stepX : stepY
        let out = outputSize(for: size)
        let bands = Parallel.bandCount(for: out.height, minimumPerBand: 64)
        // Safe: bands write disjoint destination rows; the source is only read.
        nonisolated(unsafe) let src = source + origin
        nonisolated(unsafe) let dst = destination
        Parallel.forEachBand(of: out.height, bands: bands) { _, rows in
            PlaneKernel.copy(src, du: du, dv: dv, into: dst, stride: destinationStride, width: out.width, rows: rows)
        }
    }
}

enum PlaneKernel {
    /// Destination rows `rows`: whole-row copies when rows stay rows, reversed rows for a horizontal
    /// flip, and 64×64 tiles for transposes (reads stay within a few cache lines per tile).
    static func copy(_ src: UnsafePointer<UInt8>, du: Int, dv: Int, into dst: UnsafeMutablePointer<UInt8>, stride: Int,
                     width: Int, rows: Range<Int>) {
        if du == 1 {
            for v in rows { (dst + v * stride).update(from: src + v * dv, count: width) }
            return
        }
        if du == -1 {
            for v in rows {
                let s = src + v * dv, d = dst + v * stride
                for u in 0..<width { d[u] = s[-u] }
            }
            return
        }
        // Transposes: 8×8 blocks, each read as eight 8-byte words and transposed in registers.
        if abs(dv) == 1 {
            transposeBlocks(src, du: du, dv: dv, into: dst, stride: stride, width: width, rows: rows)
            return
        }
        let tile = 64
        var v0 = rows.lowerBound
        while v0 < rows.upperBound {
            let v1 = min(v0 + tile, rows.upperBound)
            var u0 = 0
            while u0 < width {
                let u1 = min(u0 + tile, width)
                for v in v0..<v1 {
                    let s = src + v * dv, d = dst + v * stride
                    for u in u0..<u1 { d[u] = s[u * du] }
                }
                u0 = u1
            }
            v0 = v1
        }
    }
}

extension PlaneKernel {
    /// Destination rows `rows` of a transposing move (source sample (u, v) at u·du + v·dv with
    /// dv = ±1): 16×16 blocks turned in registers (`BandTranspose`; a third of the instructions of
    /// 8×8 word transposes, which made this move compute-bound: measured). The last block of a row
    /// or of the band overlaps the one before instead of leaving a ragged edge: a move writes each
    /// destination sample from the source alone, so writing one twice is harmless.
    static func transposeBlocks(_ src: UnsafePointer<UInt8>, du: Int, dv: Int, into dst: UnsafeMutablePointer<UInt8>,
                                stride: Int, width: Int, rows: Range<Int>) {
        guard width >= 16, rows.count >= 16 else {
            for v in rows {
                let s = src + v * dv, d = dst + v * stride
                for u in 0..<width { d[u] = s[u * du] }
            }
            return
        }
        /// Destination rows v0…v0+15, columns u0…u0+15: block row k is source column u0 + k's
        /// samples v0…v0+15 (reversed when dv = −1), so the transposed block is the destination's.
        @inline(__always) func block(_ v0: Int, _ u0: Int) {
            var b = BandTranspose.load { UnsafeRawPointer(src + (u0 + $0) * du + v0 * dv - (dv == 1 ? 0 : 15)) }
            if dv != 1 { BandTranspose.reverse(&b) }
            BandTranspose.transpose(&b)
            BandTranspose.store(b) { UnsafeMutableRawPointer(dst + (v0 + $0) * stride + u0) }
        }
        // 64×64 tiles: a tile's source lines (64 source rows × 64 bytes) stay in L1 while used.
        let lastRow = rows.upperBound - 16, lastColumn = width - 16
        var t0 = rows.lowerBound
        while t0 < rows.upperBound {
            let t1 = min(t0 + 64, rows.upperBound)
            var c0 = 0
            while c0 < width {
                let c1 = min(c0 + 64, width)
                var v0 = t0
                while v0 < t1 {
                    let v = min(v0, lastRow)
                    var u0 = c0
                    while u0 < c1 { block(v, min(u0, lastColumn)); u0 += 16 }
                    v0 += 16
                }
                c0 = c1
            }
            t0 = t1
        }
    }
}

extension FilterChain {
    /// The chain as one planar move when every filter is an exact pixel move for the sizes it
    /// sees (mirrors, quarter turns), else nil. An empty chain is the identity move.
    public func planarMove(for input: FrameSize) -> PlanarMove? {
        var run: MoveRun?
        var size = input
        for filter in filters {
            guard let next = MoveRun.fold(filter, at: size, into: &run) else { return nil }
            size = next
        }
        return PlanarMove(transform: run?.transform ?? .identity)
    }
}
