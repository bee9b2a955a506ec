import MediaIO

/// Expected output size: duration × (video bitrate + audio bitrate) / 8. Only for fixed bitrates:
/// a CRF encode's size depends on the picture.
public struct SizeEstimate: Sendable {
    public var duration: Double
    public var videoBitRate: Int
    public var audioBitRate: Int
    /// Bytes.
    public var bytes: Double { duration * Double(videoBitRate + audioBitRate) / 8 }
    /// Megabytes of 8 × 1024 × 1024 bits.
    public var megabytes: Double { bytes / 1_048_576 }

    /// The estimate for a job, or nil when its video is quality-based (CRF), its duration unknown
    /// or it writes nothing (`-o null`).
    public init?(job: TranscodeJob) {
        guard job.container != .null, let video = job.plan.videoBitRate,
              let duration = job.demuxer.duration, duration > 0 else { return nil }
        self.duration = duration
        videoBitRate = video
        // The plan's audio, as the run would write it.
        audioBitRate = job.plan.estimatedAudioBitRate
    }

    public var text: String {
        String(format: "%.0f bytes (%.2f MB): %.3f s × (%d + %d b/s) / 8", bytes, megabytes, duration, videoBitRate, audioBitRate)
    }
}
