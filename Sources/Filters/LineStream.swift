import CCPUFeatures

/// Writing a chain's output around the cache: whole 64-byte lines, copied from a tile of rows in
/// L1 with non-temporal stores (`lf_stream_line`), so a line of the output frame is never read
/// first. The pool's frame is out of this core's caches when a pass writes it, and 16-byte stores
/// each read their line: 0.25 ms of a 1080p quarter turn in the pipeline (BENCHMARKS.md,
/// "What each kernel optimisation bought", 478eb8a). Used by the pass that writes the chain's output (`StreamingPlaneRenderer`).
enum LineStream {
    /// Whether rows `stride` bytes apart from `base`, `width` bytes long, hold whole lines:
    /// line-aligned rows at least a line long.
    static func fits(_ base: UnsafeMutablePointer<UInt8>, stride: Int, width: Int) -> Bool {
        width >= 64 && (Int(bitPattern: base) | stride) & 63 == 0
    }

    /// How many leading bytes of each row go out as whole lines (a multiple of 64; 0 when the rows
    /// do not `fit`): the width's whole lines, and its last, partial line too when the rows own
    /// their padding (a line-aligned stride reaches that line's end) and at least `minimumTail`
    /// bytes of it are picture — a kernel writing in blocks of that many fills the line's picture
    /// with one block overlapping the one before, and the rest is padding.
    static func lines(_ base: UnsafeMutablePointer<UInt8>, stride: Int, width: Int, ownsRowPadding: Bool, minimumTail: Int) -> Int {
        guard fits(base, stride: stride, width: width) else { return 0 }
        let whole = width & ~63
        return ownsRowPadding && width - whole >= minimumTail ? (width + 63) & ~63 : whole
    }

    /// `body` with a tile of 16 rows × 64 bytes, 64-byte aligned.
    @inline(__always) static func withTile(_ body: (UnsafeMutableRawPointer) -> Void) {
        withUnsafeTemporaryAllocation(byteCount: 16 * 64, alignment: 64) { body($0.baseAddress!) }
    }

    /// Tile rows 0..<rows (64 bytes apart) to the lines at `line(r)`. (The address as a closure:
    /// helpers that took a base pointer and a stride made a quarter turn 0.21 → 0.24–0.26 ms.)
    @inline(__always) static func write(_ tile: UnsafeRawPointer, rows: Int, to line: (Int) -> UnsafeMutablePointer<UInt8>) {
#if LIVEFILTER_AVX2
        // Two 32-byte stores a line: a 1080p quarter turn 0.29–0.30 → 0.28 ms (`perf`, alternating).
        for r in 0..<rows { lf_stream_line_wide(line(r), tile + r * 64) }
#else
        for r in 0..<rows { lf_stream_line(line(r), tile + r * 64) }
#endif
    }

    /// Orders the streamed lines before anything the pass does next (another thread takes the frame).
    @inline(__always) static func finish() { lf_store_fence() }
}
