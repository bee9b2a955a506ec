import HLSClient

/// What the HLS reader did for an input: reloads, segments and parts read, retries, skips, reload
/// delays. MediaIO's own value (the reader's type stays inside), copied when asked for.
public struct HLSInputStatistics: Sendable, Equatable {
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
    /// Median and 95th percentile of how late a load found a new segment, at most (seconds).
    public var discoveryDelayP50: Double?
    public var discoveryDelayP95: Double?

    public init() {}

    init(_ s: HLSReaderStatistics.Snapshot) {
        playlistReloads = s.playlistReloads
        reloadFailures = s.reloadFailures
        blockingReloads = s.blockingReloads
        segmentsRead = s.segmentsRead
        partsRead = s.partsRead
        segmentRetries = s.segmentRetries
        segmentsSkipped = s.segmentsSkipped
        gapsSkipped = s.gapsSkipped
        restarts = s.restarts
        bytesRead = s.bytesRead
        discoveryDelayP50 = s.discoveryDelayP50
        discoveryDelayP95 = s.discoveryDelayP95
    }
}
