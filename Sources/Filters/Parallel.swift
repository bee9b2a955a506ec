#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

/// Splits independent work (rows, column strips) across the available cores.
///
/// This is the schedule half of every filter (STYLE item 7): kernels are plain functions of a
/// range, and only this helper decides how many bands there are and where they run.
public enum Parallel {
    private static let configuredWorkers = Atomic<Int>(0)

    /// How many threads a renderer splits its work over. Defaults to the number of online cores;
    /// set it (e.g. to 1 for single-thread timing) before making renderers.
    public static var workerCount: Int {
        get {
            let configured = configuredWorkers.load(ordering: .relaxed)
            if configured > 0 { return configured }
            return max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        }
        set { configuredWorkers.store(max(0, newValue), ordering: .relaxed) }
    }

    /// The most bands a split may use in `withBands(atMost:_:)` on this thread or task; nil: no limit.
    @TaskLocal static var bandLimit: Int?

    /// Runs `body` with every split inside it cut into at most `limit` bands (1: all on the calling
    /// thread). A split costs CPU (waking workers, then joining them) and gains wall time only on
    /// idle cores, so a pipeline stage that keeps up with ease runs its passes on its own thread.
    public static func withBands<R>(atMost limit: Int, _ body: () throws -> R) rethrows -> R {
        try $bandLimit.withValue(max(1, limit), operation: body)
    }

    /// The number of bands to cut `work` items into so each band has at least `minimumPerBand`.
    static func bandCount(for work: Int, minimumPerBand: Int = 1, workers: Int = Parallel.workerCount) -> Int {
        max(1, min(workers, work / max(1, minimumPerBand)))
    }

    /// Calls `body(band, range)` for `bands` disjoint, contiguous ranges covering `0..<count`,
    /// concurrently when `bands > 1`. Bands are numbered 0..<bands so callers can give each its
    /// own scratch memory.
    @_spi(Testing) public static func forEachBand(of count: Int, bands: Int, _ body: @Sendable (Int, Range<Int>) -> Void) {
        guard count > 0 else { return }
        // Fewer bands than a renderer asked for is always safe: band numbers stay below its count.
        let bands = max(1, min(bands, count, bandLimit ?? .max))
        if bands == 1 {
            body(0, 0..<count)
            return
        }
        DispatchQueue.concurrentPerform(iterations: bands) { band in
            let lower = count * band / bands
            let upper = count * (band + 1) / bands
            if lower < upper { body(band, lower..<upper) }
        }
    }
}

/// Aligned, zero-initialised scratch memory owned by one renderer, allocated once per stream.
/// `@unchecked Sendable`: threads only touch disjoint parts of it (one band each).
final class ScratchBuffer<Element: BitwiseCopyable>: @unchecked Sendable {
    let base: UnsafeMutablePointer<Element>
    let count: Int

    init(count: Int, zero: Element) {
        self.count = max(1, count)
        let raw = UnsafeMutableRawPointer.allocate(
            byteCount: self.count * MemoryLayout<Element>.stride, alignment: 64)
        base = raw.bindMemory(to: Element.self, capacity: self.count)
        base.initialize(repeating: zero, count: self.count)
    }

    deinit { UnsafeMutableRawPointer(base).deallocate() }
}

/// A raw pointer carried into `@Sendable` band closures; bands touch disjoint rows.
struct UnsafeRawPointerBox: @unchecked Sendable {
    let pointer: UnsafeRawPointer
    init(_ pointer: UnsafeRawPointer) { self.pointer = pointer }
}
