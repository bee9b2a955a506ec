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
    /// `destination` (rows `destinationStride` apart, sized `outputSize(for: size)`). `streaming`:
    /// the destination is the chain's output, not read again soon, so a transposing move may write
    /// it around the cache (`PlaneKernel.streamStrips`). `ownsRowPadding`: the destination rows'
    /// bytes past the picture, up to the stride, are theirs to overwrite (`Plane`), so a row's
    /// last, partial line goes around the cache too.
    public func apply(_ source: UnsafePointer<UInt8>, sourceStride: Int, size: FrameSize,
                      into destination: UnsafeMutablePointer<UInt8>, destinationStride: Int, streaming: Bool = false,
                      ownsRowPadding: Bool = false) {
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
            PlaneKernel.copy(src, du: du, dv: dv, into: dst, stride: destinationStride, width: out.width, rows: rows,
                             streaming: streaming, ownsRowPadding: ownsRowPadding)
        }
    }
}

enum PlaneKernel {
    /// Destination rows `rows`: whole-row copies when rows stay rows, reversed rows for a horizontal
    /// flip, and 64×64 tiles for transposes (reads stay within a few cache lines per tile).
    static func copy(_ src: UnsafePointer<UInt8>, du: Int, dv: Int, into dst: UnsafeMutablePointer<UInt8>, stride: Int,
                     width: Int, rows: Range<Int>, streaming: Bool = false, ownsRowPadding: Bool = false) {
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
        // Transposes: 16×16 blocks turned in registers (`transposeBlocks`).
        if abs(dv) == 1 {
            transposeBlocks(src, du: du, dv: dv, into: dst, stride: stride, width: width, rows: rows, streaming: streaming,
                            ownsRowPadding: ownsRowPadding)
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
                                stride: Int, width: Int, rows: Range<Int>, streaming: Bool = false, ownsRowPadding: Bool = false) {
        guard width >= 16, rows.count >= 16 else {
            for v in rows {
                let s = src + v * dv, d = dst + v * stride
                for u in 0..<width { d[u] = s[u * du] }
            }
            return
        }
        // Whole 64-byte destination lines are streamed when asked and the rows are line-aligned, the
        // last, partial one too when the rows own their padding; the columns past the streamed
        // lines (and every column otherwise) go through the cache.
        var streamed = 0
        if streaming {
            streamed = LineStream.lines(dst, stride: stride, width: width, ownsRowPadding: ownsRowPadding, minimumTail: 16)
        }
        if streamed > 0 {
            if dv == 1 {
                streamStrips(src, du: du, reversed: false, into: dst, stride: stride, columns: streamed, width: width, rows: rows)
            } else {
                streamStrips(src, du: du, reversed: true, into: dst, stride: stride, columns: streamed, width: width, rows: rows)
            }
            LineStream.finish()
        }
        guard streamed < width else { return }
        if dv == 1 {
            transposeStrips(src, du: du, reversed: false, into: dst, stride: stride, width: width, from: streamed, rows: rows)
        } else {
            transposeStrips(src, du: du, reversed: true, into: dst, stride: stride, width: width, from: streamed, rows: rows)
        }
    }

    /// Destination columns 0..<columns (a multiple of 64, on line-aligned rows) in strips of 64:
    /// four 16×16 blocks, one above the other in the source, fill 16 rows of a tile in L1 (turned
    /// two at a time in 256-bit pairs: 0.34–0.41 → 0.29–0.38 ms, `perf`, alternating runs), whose
    /// rows go out as whole cache lines (`LineStream`). With the stores kept in cache, a 1080p
    /// quarter turn in the pipeline took 0.58–0.61 ms, and 0.44–0.52 streamed (`perf`, alternating
    /// runs; writing nothing at all, 0.31–0.36). Copying the tile's lines with ordinary stores
    /// took 0.83–0.86. The source is prefetched `ahead` bytes along the strip (the next strip's
    /// start near its end), a quarter of its 64 rows per block column, into L2: 64 rows' lines
    /// in flight brought into L1 pushed out the lines in use (0.40–0.42 ms into L1 at 384 bytes,
    /// 0.30–0.32 into L2 at 512; 256–768 all within noise of it into L2). A last strip past
    /// `width` (rows that own their padding) turns its blocks one at a time, the last one moved
    /// back to end at `width`; the tile's bytes past it go to the padding. Through the cache,
    /// those columns were a fifth of a 1080p quarter turn's time (`perf`): every destination line
    /// read before its 16-byte stores, and the strips' source cold (0.30 → 0.26 ms, four pairs).
    @inline(__always)
    private static func streamStrips(_ src: UnsafePointer<UInt8>, du: Int, reversed: Bool,
                                     into dst: UnsafeMutablePointer<UInt8>, stride: Int, columns: Int, width: Int, rows: Range<Int>) {
        let lastRow = rows.upperBound - 16
        let ahead = 512
        LineStream.withTile { tile in
            var u = 0
            var step = 0
            while u < columns {
                var v0 = rows.lowerBound
                while v0 < rows.upperBound {
                    // Wrapping arithmetic: these addresses are hints, never dereferenced.
                    var pu = u, pv = v0 &+ ahead
                    if pv >= rows.upperBound { pu = u &+ 64; pv = rows.lowerBound &+ (pv &- rows.upperBound) }
                    if pu < columns {
                        let first = (step & 3) &<< 4
                        let base = Int(bitPattern: src) &+ (pu &+ first) &* du &+ (reversed ? -(pv &+ 15) : pv)
                        for i in 0..<16 { lf_prefetch_l2(UnsafeRawPointer(bitPattern: base &+ i &* du)) }
                    }
                    step &+= 1
                    let v = min(v0, lastRow)
                    // Two pairs of 16×16 blocks (`BandTranspose.Pair`): a pair's rows are 32
                    // contiguous bytes of a tile row.
                    let column = reversed ? -(v + 15) : v
                    if u + 64 <= width {
                        for p in 0..<2 {
                            let top = u + 32 * p
                            var b = BandTranspose.loadPair({ UnsafeRawPointer(src + (top + $0) * du + column) },
                                                           { UnsafeRawPointer(src + (top + 16 + $0) * du + column) })
                            if reversed { BandTranspose.reverse(&b) }
                            BandTranspose.transpose(&b)
                            BandTranspose.storePair(b) { tile + $0 * 64 + 32 * p }
                        }
                    } else {
                        var top = u
                        while top < width {
                            let first = min(top, width - 16)
                            var b = BandTranspose.load { UnsafeRawPointer(src + (first + $0) * du + column) }
                            if reversed { BandTranspose.reverse(&b) }
                            BandTranspose.transpose(&b)
                            BandTranspose.store(b) { tile + $0 * 64 + (first - u) }
                            top += 16
                        }
                    }
                    LineStream.write(tile, rows: 16) { dst + (v + $0) * stride + u }
                    v0 += 16
                }
                u += 64
            }
        }
    }

    /// The source is read in strips of 16 rows (16 destination columns), each row of a strip in
    /// order, and the strip 32 rows ahead is prefetched a few lines per block: the decoder's picture
    /// arrives out of this core's caches, and reading it down its columns (64×64 tiles) left the
    /// move waiting on loads — 0.9 ms a 1080p frame in the pipeline against 0.5–0.6 this way
    /// (measured with `perf`; warm in one process both take 0.2–0.3). Readying the destination
    /// lines with prefetches made no difference; writing them whole, around the cache, did
    /// (`streamStrips`, used for the chain's output). This path writes the rest: intermediate
    /// buffers, unaligned rows, and the columns past the last whole line.
    @inline(__always)
    private static func transposeStrips(_ src: UnsafePointer<UInt8>, du: Int, reversed: Bool,
                                        into dst: UnsafeMutablePointer<UInt8>, stride: Int, width: Int, from first: Int,
                                        rows: Range<Int>) {
        let span = rows.count
        // Source offset (along a source row) of the band's first byte in memory order.
        let low = reversed ? -(rows.upperBound - 1) : rows.lowerBound
        let lastRow = rows.upperBound - 16, lastColumn = width - 16
        let distance = 32
        var u0 = first
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
