/// H.264 profiles livefilter offers (`baseline` gives Constrained Baseline).
public enum H264Profile: String, CaseIterable, Sendable {
    case baseline, main, high
}

/// x264's speed presets, fastest first.
public enum EncoderSpeedPreset: String, CaseIterable, Sendable {
    case ultrafast, superfast, veryfast, faster, fast, medium, slow, slower, veryslow
}

extension EncoderSpeedPreset {
    /// Reference pictures (x264's preset table): in the SPS.
    var x264References: Int {
        switch self {
        case .ultrafast, .superfast, .veryfast: 1
        case .faster, .fast: 2
        case .medium: 3
        case .slow: 5
        case .slower: 8
        case .veryslow: 16
        }
    }

    /// Whether x264 lowers the chroma QP offset by 2 (in the PPS) to balance psychovisual rate-
    /// distortion: it does from sub-pixel refinement 6 (`fast` and slower presets).
    var x264PsyChromaOffset: Bool { self >= .fast }

    /// x264 parameters that make this (faster) preset write the parameter sets of `stream`'s, under
    /// `profile` (x264 applies these after it: the tools a profile leaves out stay out).
    func x264Parameters(keepingParameterSetsOf stream: EncoderSpeedPreset, profile: H264Profile?) -> [String] {
        var params: [String] = []
        if x264References != stream.x264References { params.append("ref=\(stream.x264References)") }
        if stream.x264PsyChromaOffset, !x264PsyChromaOffset { params.append("chroma-qp-offset=-2") }
        if self == .ultrafast, stream != .ultrafast {
            if profile != .baseline { params += ["cabac=1", "weightp=1"] }
            if profile == nil || profile == .high { params.append("8x8dct=1") }
            params.append("deblock=0,0")
        }
        return params
    }
}

extension EncoderSpeedPreset: Comparable {
    /// Faster first, as declared.
    public static func < (a: Self, b: Self) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// The distance between keyframes, in frames or seconds of output.
public enum KeyframeInterval: Sendable, Equatable, CustomStringConvertible {
    case frames(Int)
    case seconds(Double)

    /// Parses "60" (frames) or "2s" / "2.5s" (seconds).
    public init?(parsing text: String) {
        if text.hasSuffix("s"), let s = Double(text.dropLast()), s > 0, s.isFinite {
            self = .seconds(s)
        } else if let n = Int(text), n > 0 {
            self = .frames(n)
        } else {
            return nil
        }
    }

    public func frames(at frameRate: Rational) -> Int {
        switch self {
        case let .frames(n): n
        case let .seconds(s): max(1, Int((s * frameRate.doubleValue).rounded()))
        }
    }

    public var description: String {
        switch self {
        case let .frames(n): "\(n)"
        case let .seconds(s): "\(s)s"
        }
    }
}

/// H.264 levels x264 accepts, as written by users ("3.1") and as stored in the SPS (31).
public enum H264Level {
    public static let all = ["1", "1b", "1.1", "1.2", "1.3", "2", "2.1", "2.2", "3", "3.0", "3.1", "3.2",
                             "4", "4.0", "4.1", "4.2", "5", "5.0", "5.1", "5.2", "6", "6.0", "6.1", "6.2"]

    /// The level_idc for "3.1" (31), "4" (40) or "1b" (9); nil when not a level.
    public static func idc(_ text: String) -> Int? {
        guard all.contains(text) else { return nil }
        if text == "1b" { return 9 }
        guard let v = Double(text) else { return nil }
        return Int((v * 10).rounded())
    }
}

/// How the video is encoded. Defaults match the ffmpeg CLI's libx264 defaults.
public struct VideoEncoderSettings: Sendable, Equatable {
    public enum RateControl: Sendable, Equatable {
        /// Constant rate factor, 0…51 (lower is better; 23 is x264's default).
        case crf(Double)
        /// Average bitrate in bits per second.
        case averageBitrate(Int)
    }

    /// Quality or bitrate; nil means CRF 23 (x264's default) unless a preset sets it.
    public var rateControl: RateControl?
    public var maxRate: Int?
    public var bufferSize: Int?
    public var keyframeInterval: KeyframeInterval?
    public var profile: H264Profile?
    /// A level such as "3.1"; see `H264Level.all`.
    public var level: String?
    public var speedPreset: EncoderSpeedPreset = .medium
    /// Hard constant bitrate (x264 `nal-hrd=cbr`, padding with filler data) with an average-bitrate
    /// `rateControl`: the file's bitrate then matches the request even for simple pictures, so a
    /// size estimate holds. Presets with a fixed bitrate use it.
    public var constantBitRate = false
    /// Forces a fixed keyframe cadence (no scene-cut keyframes), as HLS segmenting needs.
    public var fixedKeyframeCadence = false
    /// Each picture's packet comes out before the next picture goes in: x264's `zerolatency` tune
    /// (no B-frames, no look-ahead and so no macroblock tree, slice threads instead of frame
    /// threads). For LL-HLS parts, which are published the moment their last picture is encoded;
    /// costs some quality per bit.
    public var lowDelay = false
    /// Encode with `speedPreset`'s search but write the parameter sets (SPS and PPS) a stream at
    /// this preset has, byte for byte, so an overload step can switch to a faster preset at a
    /// keyframe under the stream's one global header, and no player sees the sets change: x264's
    /// reference count, the chroma QP offset its psychovisual tuning applies, and (for ultrafast)
    /// CABAC, the 8×8 transform, weighted P prediction and deblocking. Nil: the preset's own.
    public var parameterSetsOf: EncoderSpeedPreset?

    public init() {}
}

/// How audio is handled.
public enum AudioSettings: Sendable, Equatable {
    /// Copy AAC as is; re-encode anything else with default AAC settings.
    case automatic
    /// Re-encode to AAC, with unset fields following the source.
    case aac(AACSettings)
    /// Drop audio.
    case none
}

public struct AACSettings: Sendable, Equatable {
    public var bitRate: Int?
    public var sampleRate: Int?
    public var channels: Int?
    public init(bitRate: Int? = nil, sampleRate: Int? = nil, channels: Int? = nil) {
        self.bitRate = bitRate
        self.sampleRate = sampleRate
        self.channels = channels
    }
    public static let defaultBitRatePerChannel = 64_000
}
