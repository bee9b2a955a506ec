import Filters
import MediaIO

/// Dimensions rounded to a multiple, by scaling, cropping or padding.
public struct Alignment: Sendable, Equatable {
    public enum Mode: String, Sendable, CaseIterable {
        /// Resize to the nearest multiple (a slight aspect change, at most a few pixels).
        case scale
        /// Cut the few extra pixels, centred (rounds down).
        case crop
        /// Add black borders, centred (rounds up).
        case pad
    }

    public var multiple: Int
    public var mode: Mode

    public init(multiple: Int, mode: Mode = .crop) {
        self.multiple = multiple
        self.mode = mode
    }

    /// The filter that aligns a frame of `size`, or nil when it is aligned already.
    public func filter(for size: FrameSize) -> (any Filter)? {
        let m = multiple
        func down(_ v: Int) -> Int { max(m, v / m * m) }
        func up(_ v: Int) -> Int { (v + m - 1) / m * m }
        func nearest(_ v: Int) -> Int { max(m, Int((Double(v) / Double(m)).rounded()) * m) }
        guard size.width % m != 0 || size.height % m != 0 else { return nil }
        switch mode {
        case .scale:
            return Scale(width: nearest(size.width), height: nearest(size.height))
        case .crop:
            let w = min(size.width, down(size.width)), h = min(size.height, down(size.height))
            return Crop(width: w, height: h, x: (size.width - w) / 2, y: (size.height - h) / 2)
        case .pad:
            return Pad(width: up(size.width), height: up(size.height))
        }
    }
}

/// Export presets: the settings of the iOS compressors people know, as values.
/// A preset fills in what the job leaves unset; explicit settings win.
public enum ExportPreset: String, CaseIterable, Sendable {
    case shareSmall = "share-small"
    case compress720p = "compress-720p"
    case compact
    case medium
    case cameraBack = "camera-back"
    case cameraFront = "camera-front"

    /// One line for `livefilter presets`.
    public var summary: String {
        switch self {
        case .shareSmall:
            "maximum compatibility: fit inside 512x288 (16:9) or 480x360 (4:3), sides multiples of 16, "
                + "H.264 Constrained Baseline 3.0 at 725 kb/s, 30 fps, AAC mono 64 kb/s 44.1 kHz, MP4 faststart, rotation baked in"
        case .compress720p:
            "longest side at most 1280 (1280x720, 720x1280 or 720x720 by shape; smaller sources keep their size), "
                + "video min(source, 3.5 Mb/s), audio passed through, faststart"
        case .compact:
            "classic compressor defaults: 768,000 b/s video, keyframe every 30 frames, High 4.1, AAC 80 kb/s 22.05 kHz"
        case .medium:
            "like AVAssetExportPresetMediumQuality: fit inside 568x320 (or 480x360 for 4:3), about 713 kb/s video, "
                + "AAC mono 64 kb/s 44.1 kHz"
        case .cameraBack:
            "portrait fix for the back camera: rotate 270° in the pixels, no rotation tag left"
        case .cameraFront:
            "portrait fix for the front camera: rotate 90° then mirror, in the pixels, no rotation tag left"
        }
    }

    /// Fills in `config` for a source: the preset's filters go after the job's chain; settings the
    /// job left unset take the preset's values.
    public func apply(to config: inout JobConfiguration, source: VideoStreamInfo, sourceBitRate: Int?) throws(FilterError) {
        var filters = config.chain.filters
        var video = config.video
        var audio = AACSettings()
        var rate: Rational?
        var orientation = OrientationPolicy.auto
        var alignment: Alignment?
        // The picture as shown: the chain so far decides shape (a rotation tag turns it too).
        let displayed = try displayedSize(config: config, source: source)
        let portrait = displayed.height > displayed.width

        switch self {
        case .shareSmall:
            let aspect = Double(max(displayed.width, displayed.height)) / Double(min(displayed.width, displayed.height))
            var box = aspect >= (16.0 / 9 + 4.0 / 3) / 2 ? FrameSize(512, 288) : FrameSize(480, 360)
            if portrait { box = box.swapped }
            if displayed.width > box.width || displayed.height > box.height { filters.append(Scale(.fit(box))) }
            alignment = Alignment(multiple: 16, mode: .crop)
            video.profile = video.profile ?? .baseline
            video.level = video.level ?? "3.0"
            if video.rateControl == nil { video.rateControl = .averageBitrate(725_000); video.constantBitRate = true }
            rate = Rational(30, 1)
            audio = AACSettings(bitRate: 64_000, sampleRate: 44_100, channels: 1)
        case .compress720p:
            let box = displayed.width == displayed.height ? FrameSize(720, 720) : (portrait ? FrameSize(720, 1280) : FrameSize(1280, 720))
            if displayed.width > box.width || displayed.height > box.height { filters.append(Scale(.fit(box))) }
            let cap = 3_500_000
            if video.rateControl == nil {
                video.rateControl = .averageBitrate(min(sourceBitRate ?? cap, cap))
                video.constantBitRate = true
            }
        case .compact:
            if video.rateControl == nil { video.rateControl = .averageBitrate(768_000); video.constantBitRate = true }
            video.keyframeInterval = video.keyframeInterval ?? .frames(30)
            video.profile = video.profile ?? .high
            video.level = video.level ?? "4.1"
            audio = AACSettings(bitRate: 80_000, sampleRate: 22_050)
        case .medium:
            let aspect = Double(max(displayed.width, displayed.height)) / Double(min(displayed.width, displayed.height))
            var box = aspect >= (16.0 / 9 + 4.0 / 3) / 2 ? FrameSize(568, 320) : FrameSize(480, 360)
            if portrait { box = box.swapped }
            if displayed.width > box.width || displayed.height > box.height { filters.append(Scale(.fit(box))) }
            if video.rateControl == nil { video.rateControl = .averageBitrate(713_000); video.constantBitRate = true }
            audio = AACSettings(bitRate: 64_000, sampleRate: 44_100, channels: 1)
        case .cameraBack:
            filters.insert(Rotate(quarterTurns: 3), at: 0)
            orientation = .ignore
        case .cameraFront:
            filters.insert(contentsOf: [Rotate(quarterTurns: 1), Mirror(axis: .horizontal)] as [any Filter], at: 0)
            orientation = .ignore
        }

        config.chain = FilterChain(filters)
        config.video = video
        config.orientation = config.orientation ?? orientation
        // Every preset writes constant frame rate: the source's nominal rate unless the preset sets one.
        config.frameRate = config.frameRate ?? rate ?? source.plausibleFrameRate
            ?? Rational(30, 1)
        config.alignment = config.alignment ?? alignment
        switch (self, config.audio) {
        case (.compress720p, _), (.cameraBack, _), (.cameraFront, _), (_, .none):
            break
        case (_, .automatic):
            config.audio = .aac(audio)
        case let (_, .aac(given)):
            config.audio = .aac(AACSettings(bitRate: given.bitRate ?? audio.bitRate, sampleRate: given.sampleRate ?? audio.sampleRate,
                                            channels: given.channels ?? audio.channels))
        }
    }

    private func displayedSize(config: JobConfiguration, source: VideoStreamInfo) throws(FilterError) -> FrameSize {
        try OutputGeometry(video: source, chain: config.chain, orientation: config.orientation ?? .auto, evenSize: false)
            .chainOutputSize
    }
}
