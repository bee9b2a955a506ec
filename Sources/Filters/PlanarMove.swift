import CCPUFeatures
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
        if dv == 1 {
            transposeStrips(src, du: du, reversed: false, into: dst, stride: stride, width: width, rows: rows)
        } else {
            transposeStrips(src, du: du, reversed: true, into: dst, stride: stride, width: width, rows: rows)
        }
    }

    /// The source is read in strips of 16 rows (16 destination columns), each row of a strip in
    /// order, and the strip 32 rows ahead is prefetched a few lines per block: the decoder's picture
    /// arrives out of this core's caches, and reading it down its columns (64×64 tiles) left the
    /// move waiting on loads — 0.9 ms a 1080p frame in the pipeline against 0.5–0.6 this way
    /// (measured with `perf`; warm in one process both take 0.2–0.3). Readying the destination
    /// lines too made no difference here (measured): the recycled pool buffer takes the strided
    /// 16-byte stores from cache.
    @inline(__always)
    private static func transposeStrips(_ src: UnsafePointer<UInt8>, du: Int, reversed: Bool,
                                        into dst: UnsafeMutablePointer<UInt8>, stride: Int, width: Int, rows: Range<Int>) {
        let span = rows.count
        // Source offset (along a source row) of the band's first byte in memory order.
        let low = reversed ? -(rows.upperBound - 1) : rows.lowerBound
        let lastRow = rows.upperBound - 16, lastColumn = width - 16
        let distance = 32
        var u0 = 0
        while u0 < width {
            let u = min(u0, lastColumn)
            let next = u0 + distance
            let prefetching = next + 15 < width
            var v0 = rows.lowerBound
            // The next strip's lines, four rows of one 64-byte column per block: 4 × (span / 16)
            // ≥ 16 × span / 64. Wrapping arithmetic: these addresses are hints, never dereferenced.
            let nextStrip = Int(bitPattern: src) &+ next &* du &+ low
            var block = 0
            while v0 < rows.upperBound {
                let column = (block >> 2) &<< 6
                if prefetching, column < span {
                    let p = nextStrip &+ (((block & 3) &<< 2) &* du &+ column)
                    lf_prefetch(UnsafeRawPointer(bitPattern: p))
                    lf_prefetch(UnsafeRawPointer(bitPattern: p &+ du))
                    lf_prefetch(UnsafeRawPointer(bitPattern: p &+ 2 &* du))
                    lf_prefetch(UnsafeRawPointer(bitPattern: p &+ 3 &* du))
                }
                block &+= 1
                let v = min(v0, lastRow)
                // Block row k is source row u + k's samples v…v+15 (reversed: read from v+15 down).
                var b = BandTranspose.load { UnsafeRawPointer(src + (u + $0) * du + (reversed ? -(v + 15) : v)) }
                if reversed { BandTranspose.reverse(&b) }
                BandTranspose.transpose(&b)
                BandTranspose.store(b) { UnsafeMutableRawPointer(dst + (v + $0) * stride + u) }
                v0 += 16
            }
            u0 += 16
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
