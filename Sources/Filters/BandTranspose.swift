import CCPUFeatures
/// 16×16 blocks of bytes transposed in registers: four rounds of byte interleaves (each rotates a
/// sample's row-and-column index by one bit, so four swap row and column) — about a third of the
/// instructions of an 8×8 word transpose (measured). The plane scaler turns its bands with it
/// (`turnBand`, `unturn`); quarter turns on the planes use its blocks directly (`PlaneKernel`).
enum BandTranspose {
    /// `turned` row x (16 samples, one per band row; rows `pitch` bytes apart) → destination rows
    /// 0..<rows, column x.
    /// `streaming`: the rows are the chain's output; whole lines go around the cache (`LineStream`),
    /// the caller ends the pass with `LineStream.finish()`.
    static func unturn(_ turned: UnsafePointer<UInt8>, width: Int, into destination: UnsafeMutablePointer<UInt8>, stride: Int, rows: Int,
                       pitch: Int = 16, streaming: Bool = false) {
        var x = 0
        if streaming, LineStream.fits(destination, stride: stride, width: width) {
            LineStream.withTile { tile in
                while x + 64 <= width {
                    for j in 0..<4 {
                        var block = load { UnsafeRawPointer(turned + (x + 16 * j + $0) * pitch) }
                        transpose(&block)
                        store(block, count: rows) { tile + $0 * 64 + 16 * j }
                    }
                    LineStream.write(tile, rows: rows) { destination + $0 * stride + x }
                    x += 64
                }
            }
        }
        while x + 16 <= width {
            // The destination lines of the next 64 columns, four rows per block, readied for
            // writing: the output frame comes from the pool out of this core's caches (perf: 0.20
            // → 0.15 ms a 1080p scale in the pipeline).
            let ahead = (x & ~63) + 64
            if ahead < width {
                let q = ((x >> 4) & 3) * 4
                var j = q
                while j < min(q + 4, rows) { lf_prefetch_write(destination + j * stride + ahead); j += 1 }
            }
            var block = load { UnsafeRawPointer(turned + (x + $0) * pitch) }
            transpose(&block)
            store(block, count: rows) { UnsafeMutableRawPointer(destination + $0 * stride + x) }
            x += 16
        }
        while x < width {
            for r in 0..<rows { destination[r * stride + x] = turned[x * pitch + r] }
            x += 1
        }
    }

    /// Band rows 0..<32 (`stride` apart, `width` samples) → `turned` row x (32 bytes) = column x's
    /// 32 samples: both halves of the band at once (`Pair`).
    static func turnBand(_ band: UnsafePointer<UInt8>, stride: Int, width: Int, into turned: UnsafeMutablePointer<UInt8>) {
        var x = 0
        while x + 16 <= width {
            var pair = loadPair({ UnsafeRawPointer(band + $0 * stride + x) }, { UnsafeRawPointer(band + (16 + $0) * stride + x) })
            transpose(&pair)
            storePair(pair) { UnsafeMutableRawPointer(turned + (x + $0) * 32) }
            x += 16
        }
        while x < width {
            for r in 0..<32 { turned[x * 32 + r] = band[r * stride + x] }
            x += 1
        }
    }

    /// Sixteen rows of 16 samples, kept in registers (a tuple with fixed indices; an array or a
    /// subscripted tuple went through memory and was three times slower, measured).
    typealias Block = (SIMD16<UInt8>, SIMD16<UInt8>, SIMD16<UInt8>, SIMD16<UInt8>,
                       SIMD16<UInt8>, SIMD16<UInt8>, SIMD16<UInt8>, SIMD16<UInt8>,
                       SIMD16<UInt8>, SIMD16<UInt8>, SIMD16<UInt8>, SIMD16<UInt8>,
                       SIMD16<UInt8>, SIMD16<UInt8>, SIMD16<UInt8>, SIMD16<UInt8>)

    /// Row i from `row(i)`.
    @inline(__always) static func load(_ row: (Int) -> UnsafeRawPointer) -> Block {
        @inline(__always) func at(_ i: Int) -> SIMD16<UInt8> { row(i).loadUnaligned(as: SIMD16<UInt8>.self) }
        return (at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7),
                at(8), at(9), at(10), at(11), at(12), at(13), at(14), at(15))
    }

    /// Rows 0..<count to `row(i)`.
    @inline(__always) static func store(_ r: Block, count: Int = 16, _ row: (Int) -> UnsafeMutableRawPointer) {
        @inline(__always) func put(_ i: Int, _ v: SIMD16<UInt8>) {
            if i < count { row(i).storeBytes(of: v, as: SIMD16<UInt8>.self) }
        }
        put(0, r.0); put(1, r.1); put(2, r.2); put(3, r.3); put(4, r.4); put(5, r.5); put(6, r.6); put(7, r.7)
        put(8, r.8); put(9, r.9); put(10, r.10); put(11, r.11); put(12, r.12); put(13, r.13); put(14, r.14); put(15, r.15)
    }

    /// Each row's samples in reverse order.
    @inline(__always) static func reverse(_ r: inout Block) {
        @inline(__always) func reversed(_ v: SIMD16<UInt8>) -> SIMD16<UInt8> {
            var out = SIMD16<UInt8>()
            for j in 0..<16 { out[j] = v[15 - j] }
            return out
        }
        r = (reversed(r.0), reversed(r.1), reversed(r.2), reversed(r.3), reversed(r.4), reversed(r.5), reversed(r.6), reversed(r.7),
             reversed(r.8), reversed(r.9), reversed(r.10), reversed(r.11), reversed(r.12), reversed(r.13), reversed(r.14), reversed(r.15))
    }

    /// The low halves of `a` and `b` interleaved, and their high halves.
    @inline(__always) static func zip(_ a: SIMD16<UInt8>, _ b: SIMD16<UInt8>) -> (SIMD16<UInt8>, SIMD16<UInt8>) {
        var low = SIMD16<UInt8>(), high = SIMD16<UInt8>()
        for j in 0..<8 {
            low[2 * j] = a[j]; low[2 * j + 1] = b[j]
            high[2 * j] = a[8 + j]; high[2 * j + 1] = b[8 + j]
        }
        return (low, high)
    }

    /// Row 2i ← the low halves of rows i and i + 8 interleaved, row 2i + 1 ← their high halves;
    /// four times. A sample at (row r₃r₂r₁r₀, column c₃c₂c₁c₀) moves to (r₂r₁r₀c₃, c₂c₁c₀r₃).
    @inline(__always) static func transpose(_ r: inout Block) {
        for _ in 0..<4 {
            let (l0, h0) = zip(r.0, r.8)
            let (l1, h1) = zip(r.1, r.9)
            let (l2, h2) = zip(r.2, r.10)
            let (l3, h3) = zip(r.3, r.11)
            let (l4, h4) = zip(r.4, r.12)
            let (l5, h5) = zip(r.5, r.13)
            let (l6, h6) = zip(r.6, r.14)
            let (l7, h7) = zip(r.7, r.15)
            r = (l0, h0, l1, h1, l2, h2, l3, h3, l4, h4, l5, h5, l6, h6, l7, h7)
        }
    }
}

/// Two 16×16 blocks turned at once in 256-bit vectors: row i of a `Pair` is (block A's row i,
/// block B's row i). The byte interleaves of `transpose` work within each 128-bit half, so the
/// same four rounds turn both blocks with half the instructions of two `Block`s, and row j comes
/// out as (A's column j, B's column j): 32 contiguous bytes when B sits beside A in the output.
/// Used where it measured faster: the scaler's `turnBand` (a 1080p scale 0.76 → 0.73 ms in one
/// process) and a quarter turn's streamed strips, whose pairs fill 32 bytes of a tile row (0.34–0.41
/// → 0.29–0.38 ms in the pipeline, `perf`). A quarter turn storing pairs straight into the
/// destination's rows was slower (0.46 → 0.53 ms), and an `unturn` with pairs, whose halves go to
/// different rows, compiled to blends (0.94 ms). The reverse works on each half as a `SIMD16`: a
/// loop over the 32 lanes compiled lane by lane (a 1080p quarter turn 1.6 ms).
extension BandTranspose {
    typealias Pair = (SIMD32<UInt8>, SIMD32<UInt8>, SIMD32<UInt8>, SIMD32<UInt8>,
                      SIMD32<UInt8>, SIMD32<UInt8>, SIMD32<UInt8>, SIMD32<UInt8>,
                      SIMD32<UInt8>, SIMD32<UInt8>, SIMD32<UInt8>, SIMD32<UInt8>,
                      SIMD32<UInt8>, SIMD32<UInt8>, SIMD32<UInt8>, SIMD32<UInt8>)

    /// Row i from `first(i)` (16 bytes) and `second(i)` (16 bytes).
    @inline(__always) static func loadPair(_ first: (Int) -> UnsafeRawPointer, _ second: (Int) -> UnsafeRawPointer) -> Pair {
        @inline(__always) func at(_ i: Int) -> SIMD32<UInt8> {
            SIMD32(lowHalf: first(i).loadUnaligned(as: SIMD16<UInt8>.self), highHalf: second(i).loadUnaligned(as: SIMD16<UInt8>.self))
        }
        return (at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7),
                at(8), at(9), at(10), at(11), at(12), at(13), at(14), at(15))
    }

    /// Row i (32 bytes) to `row(i)`.
    @inline(__always) static func storePair(_ r: Pair, _ row: (Int) -> UnsafeMutableRawPointer) {
        @inline(__always) func put(_ i: Int, _ v: SIMD32<UInt8>) { row(i).storeBytes(of: v, as: SIMD32<UInt8>.self) }
        put(0, r.0); put(1, r.1); put(2, r.2); put(3, r.3); put(4, r.4); put(5, r.5); put(6, r.6); put(7, r.7)
        put(8, r.8); put(9, r.9); put(10, r.10); put(11, r.11); put(12, r.12); put(13, r.13); put(14, r.14); put(15, r.15)
    }

    /// Each row's halves, each in reverse order.
    @inline(__always) static func reverse(_ r: inout Pair) {
        @inline(__always) func half(_ v: SIMD16<UInt8>) -> SIMD16<UInt8> {
            var out = SIMD16<UInt8>()
            for j in 0..<16 { out[j] = v[15 - j] }
            return out
        }
        @inline(__always) func reversed(_ v: SIMD32<UInt8>) -> SIMD32<UInt8> { SIMD32(lowHalf: half(v.lowHalf), highHalf: half(v.highHalf)) }
        r = (reversed(r.0), reversed(r.1), reversed(r.2), reversed(r.3), reversed(r.4), reversed(r.5), reversed(r.6), reversed(r.7),
             reversed(r.8), reversed(r.9), reversed(r.10), reversed(r.11), reversed(r.12), reversed(r.13), reversed(r.14), reversed(r.15))
    }

    /// Within each 128-bit half: the low halves of `a` and `b` interleaved, and their high halves.
    @inline(__always) static func zip(_ a: SIMD32<UInt8>, _ b: SIMD32<UInt8>) -> (SIMD32<UInt8>, SIMD32<UInt8>) {
        var low = SIMD32<UInt8>(), high = SIMD32<UInt8>()
        for h in stride(from: 0, to: 32, by: 16) {
            for j in 0..<8 {
                low[h + 2 * j] = a[h + j]; low[h + 2 * j + 1] = b[h + j]
                high[h + 2 * j] = a[h + 8 + j]; high[h + 2 * j + 1] = b[h + 8 + j]
            }
        }
        return (low, high)
    }

    /// `transpose` of a `Block`, on both blocks of the pair. Written out again rather than shared
    /// through a generic over the row type: that version, even transparent, took a quarter turn
    /// from 0.21 to 0.71 ms and a scale from 0.70 to 0.98 (measured).
    @_transparent static func transpose(_ r: inout Pair) {
        for _ in 0..<4 {
            let (l0, h0) = zip(r.0, r.8)
            let (l1, h1) = zip(r.1, r.9)
            let (l2, h2) = zip(r.2, r.10)
            let (l3, h3) = zip(r.3, r.11)
            let (l4, h4) = zip(r.4, r.12)
            let (l5, h5) = zip(r.5, r.13)
            let (l6, h6) = zip(r.6, r.14)
            let (l7, h7) = zip(r.7, r.15)
            r = (l0, h0, l1, h1, l2, h2, l3, h3, l4, h4, l5, h5, l6, h6, l7, h7)
        }
    }
}
