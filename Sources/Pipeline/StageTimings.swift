import Dispatch

/// Wall time of one pass of the chain renderer: a filter, or a fused run of mirrors and quarter turns
/// (named "rotate 90 + mirror horizontal").
public struct FilterPassTime: Sendable {
    public var name: String
    public var nanoseconds: UInt64
}

/// Wall time spent in each stage of the pipeline, for `--stats` and the benchmark.
public struct StageTimings: Sendable {
    public enum Stage: String, CaseIterable, Sendable {
        case demux, decode, toRGB = "to RGB", filter = "filter chain", toYUV = "to YUV", encode, mux

        /// The machine-readable name (JSON progress, report, metrics' `stage` label): demux, decode,
        /// to_rgb, filter, to_yuv, encode, mux.
        public var key: String {
            switch self {
            case .demux: "demux"
            case .decode: "decode"
            case .toRGB: "to_rgb"
            case .filter: "filter"
            case .toYUV: "to_yuv"
            case .encode: "encode"
            case .mux: "mux"
            }
        }
    }

    public private(set) var nanoseconds: [Stage: UInt64] = [:]
    public private(set) var counts: [Stage: Int] = [:]

    public init() {}

    /// Runs `body`, adding its wall time to `stage`.
    @inline(__always)
    public mutating func measure<T, E: Error>(_ stage: Stage, _ body: () throws(E) -> T) throws(E) -> T {
        let start = DispatchTime.now().uptimeNanoseconds
        defer {
            nanoseconds[stage, default: 0] += DispatchTime.now().uptimeNanoseconds - start
            counts[stage, default: 0] += 1
        }
        return try body()
    }

    mutating func add(_ stage: Stage, nanoseconds elapsed: UInt64) {
        nanoseconds[stage, default: 0] += elapsed
        counts[stage, default: 0] += 1
    }

    /// Milliseconds per call of `stage`, averaged.
    public func millisecondsPerCall(_ stage: Stage) -> Double? {
        guard let n = nanoseconds[stage], let c = counts[stage], c > 0 else { return nil }
        return Double(n) / Double(c) / 1e6
    }

    public func totalMilliseconds(_ stage: Stage) -> Double {
        Double(nanoseconds[stage] ?? 0) / 1e6
    }
}
