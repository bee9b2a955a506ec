import Filters

/// How many bands the filter stage lets a picture's passes split into.
///
/// A split costs CPU: waking a worker, then joining it. On the rotate chain at 1080p that was
/// 0.2 ms of 0.45 a picture (three planes; `perf stat`, null outputs; BENCHMARKS.md, "What each kernel optimisation bought", e70494f). It saves wall
/// time only when a core is idle, and in a pipeline the decoder and the encoder keep the cores
/// busy. So while the stage keeps up with ease, it runs every pass on its own thread. When it is
/// busy most of the time (a heavy chain, a big picture), the stages around it are waiting on it and
/// their cores are free. Then its passes split.
///
/// The rule uses the busy fraction: the stage's working time over the wall time, measured over a
/// window of pictures. Above `splitAbove`, the passes split. A split stage's fraction is scaled back
/// up by its band count (an upper bound of its time on one core) and compared with `joinBelow`: a
/// stage does not join again only to split on the next window. The first `warmUpWindows` decide
/// nothing: fresh buffers fault in and the decoder's queue drains, so the stage is busier then than
/// it will be.
@_spi(Testing) public struct BandPolicy: Sendable, Equatable {
    public static let splitAbove = 0.75
    public static let joinBelow = 0.5
    /// Pictures per measurement.
    public static let window = 16
    public static let warmUpWindows = 2

    /// The bands a pass may use now: 1, or `available`.
    public private(set) var bands = 1
    private let available: Int
    private var busy: UInt64 = 0
    private var pictures = 0
    private var windowStart: UInt64?
    private var windows = 0

    public init(available: Int = Parallel.workerCount) {
        self.available = max(1, available)
    }

    /// Counts one picture that took `busyNanoseconds` of work, finished at `now` (monotonic
    /// nanoseconds). Decides at the end of each window.
    public mutating func record(busyNanoseconds: UInt64, finishedAt now: UInt64) {
        guard let start = windowStart else {
            // The first picture opens the first window: the time before it is start-up, not work.
            windowStart = now
            return
        }
        busy += busyNanoseconds
        pictures += 1
        guard pictures >= Self.window, now > start else { return }
        let fraction = Double(busy) / Double(now - start)
        windows += 1
        if windows > Self.warmUpWindows {
            if bands == 1, fraction > Self.splitAbove {
                bands = available
            } else if bands > 1, fraction * Double(bands) < Self.joinBelow {
                bands = 1
            }
        }
        (busy, pictures, windowStart) = (0, 0, now)
    }
}
