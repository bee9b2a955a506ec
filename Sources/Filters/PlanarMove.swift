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
    /// dv = ±1): whole 8×8 blocks through `transpose8x8`, the ragged right and bottom edges one
    /// sample at a time.
    static func transposeBlocks(_ src: UnsafePointer<UInt8>, du: Int, dv: Int, into dst: UnsafeMutablePointer<UInt8>,
                                stride: Int, width: Int, rows: Range<Int>) {
        /// One 8×8 block: destination rows v0…v0+7, columns u0…u0+7.
        @inline(__always) func block(_ v0: Int, _ u0: Int) {
            var w = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
            withUnsafeMutableBytes(of: &w) { words in
                let word = words.baseAddress!.assumingMemoryBound(to: UInt64.self)
                for k in 0..<8 {
                    // Samples v0…v0+7 of source column u0 + k: eight bytes, ascending when dv = 1.
                    let first = src + (u0 + k) * du + v0 * dv
                    word[k] = dv == 1 ? UnsafeRawPointer(first).loadUnaligned(as: UInt64.self)
                        : UnsafeRawPointer(first - 7).loadUnaligned(as: UInt64.self).byteSwapped
                }
                transpose8x8(word)
                for k in 0..<8 {
                    UnsafeMutableRawPointer(dst + (v0 + k) * stride + u0).storeBytes(of: word[k], as: UInt64.self)
                }
            }
        }
        let fullRows = rows.lowerBound + (rows.count / 8) * 8
        let fullColumns = width / 8 * 8
        // 64×64 tiles of blocks: a tile's source lines (64 rows × 64 bytes) stay in L1 while used.
        var t0 = rows.lowerBound
        while t0 < fullRows {
            let t1 = min(t0 + 64, fullRows)
            var c0 = 0
            while c0 < fullColumns {
                let c1 = min(c0 + 64, fullColumns)
                var v0 = t0
                while v0 < t1 {
                    var u0 = c0
                    while u0 < c1 { block(v0, u0); u0 += 8 }
                    v0 += 8
                }
                c0 = c1
            }
            t0 = t1
        }
        // The ragged right columns and bottom rows, one sample at a time.
        for v in rows {
            let s = src + v * dv, d = dst + v * stride
            for u in (v < fullRows ? fullColumns : 0)..<width { d[u] = s[u * du] }
        }
    }

    /// Transposes the 8×8 byte matrix whose row k is word k (byte j = column j) in place: three
    /// rounds of swapping off-diagonal blocks of 1, 2 and 4 bytes.
    @inline(__always)
    static func transpose8x8(_ w: UnsafeMutablePointer<UInt64>) {
        @inline(__always) func swap(_ a: Int, _ b: Int, _ shift: UInt64, _ mask: UInt64) {
            let t = ((w[a] >> shift) ^ w[b]) & mask
            w[b] ^= t
            w[a] ^= t << shift
        }
        for a in [0, 2, 4, 6] { swap(a, a + 1, 8, 0x00FF_00FF_00FF_00FF) }
        for a in [0, 1, 4, 5] { swap(a, a + 2, 16, 0x0000_FFFF_0000_FFFF) }
        for a in [0, 1, 2, 3] { swap(a, a + 4, 32, 0x0000_0000_FFFF_FFFF) }
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
