import Metrics
import Synchronization

/// What the reader did, for the report and `/metrics` (the same names, `livefilter_input_…`).
public final class HLSReaderStatistics: Sendable {
    public struct Snapshot: Sendable, Equatable {
        public var playlistReloads = 0
        /// Reloads that failed (and were retried).
        public var reloadFailures = 0
        /// Blocking reloads (`_HLS_msn`) among the reloads.
        public var blockingReloads = 0
        public var segmentsRead = 0
        public var partsRead = 0
        public var segmentRetries = 0
        public var segmentsSkipped = 0
        public var gapsSkipped = 0
        /// Times the origin restarted (the media sequence went back) or the window left the reader behind.
        public var restarts = 0
        public var bytesRead = 0
        /// Median and 95th percentile of how late a load found a new segment, at most (seconds):
        /// from the last load that did not list it (or its predicted publication) to the load that did.
        public var discoveryDelayP50: Double?
        public var discoveryDelayP95: Double?
    }

    private let state = Mutex<(Snapshot, [Double])>((Snapshot(), []))
    private let reloads, reloadFailures, retries, skipped, segments, parts: Counter
    private let discovery: Recorder

    /// `dimensions`: the run's (`RunMetrics`), on every metric.
    init(dimensions: [(String, String)] = []) {
        func counter(_ name: String) -> Counter { Counter(label: name, dimensions: dimensions) }
        reloads = counter("livefilter_input_playlist_reloads_total")
        reloadFailures = counter("livefilter_input_playlist_reload_failures_total")
        retries = counter("livefilter_input_segment_retries_total")
        skipped = counter("livefilter_input_segments_skipped_total")
        segments = counter("livefilter_input_segments_total")
        parts = counter("livefilter_input_parts_total")
        discovery = Recorder(label: "livefilter_input_reload_delay_seconds", dimensions: dimensions)
    }

    public var snapshot: Snapshot {
        state.withLock { s in
            var snapshot = s.0
            let sorted = s.1.sorted()
            if !sorted.isEmpty {
                snapshot.discoveryDelayP50 = sorted[sorted.count / 2]
                snapshot.discoveryDelayP95 = sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.95).rounded(.up)) - 1)]
            }
            return snapshot
        }
    }

    func reloaded(blocking: Bool) {
        state.withLock { $0.0.playlistReloads += 1; if blocking { $0.0.blockingReloads += 1 } }
        reloads.increment()
    }
    func reloadFailed() { state.withLock { $0.0.reloadFailures += 1 }; reloadFailures.increment() }
    func segmentRead(part: Bool) {
        state.withLock { if part { $0.0.partsRead += 1 } else { $0.0.segmentsRead += 1 } }
        (part ? parts : segments).increment()
    }
    func retried() { state.withLock { $0.0.segmentRetries += 1 }; retries.increment() }
    func skippedSegment(gap: Bool) {
        state.withLock { if gap { $0.0.gapsSkipped += 1 } else { $0.0.segmentsSkipped += 1 } }
        if !gap { skipped.increment() }
    }
    func restarted() { state.withLock { $0.0.restarts += 1 } }
    func read(bytes: Int) { state.withLock { $0.0.bytesRead += bytes } }
    func discovered(after seconds: Double) {
        state.withLock { $0.1.append(seconds) }
        discovery.record(seconds)
    }
}
