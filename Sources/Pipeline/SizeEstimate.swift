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
        guard job.container != .null, case let .averageBitrate(video)? = job.configuration.video.rateControl,
              let duration = job.demuxer.duration, duration > 0 else { return nil }
        self.duration = duration
        videoBitRate = video
        let audio = job.demuxer.audio
        switch job.configuration.audio {
        case .none:
            audioBitRate = 0
        case .automatic:
            guard let audio else { audioBitRate = 0; break }
            audioBitRate = audio.isAAC ? (audio.bitRate ?? 128_000) : AACSettings.defaultBitRatePerChannel * min(audio.channels, 2)
        case let .aac(settings):
            guard let audio else { audioBitRate = 0; break }
            audioBitRate = settings.bitRate ?? AACSettings.defaultBitRatePerChannel * (settings.channels ?? min(audio.channels, 2))
        }
    }

    public var text: String {
        String(format: "%.0f bytes (%.2f MB): %.3f s × (%d + %d b/s) / 8", bytes, megabytes, duration, videoBitRate, audioBitRate)
    }
}
