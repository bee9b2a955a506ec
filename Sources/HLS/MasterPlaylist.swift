/// RESOLUTION=WxH.
public struct Resolution: Sendable, Equatable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Parses the decimal-resolution form `1280x720` (nothing else).
    public init?(parsing text: some StringProtocol) {
        let parts = text.split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) }),
              let w = PlaylistNumber.integer(parts[0]), let h = PlaylistNumber.integer(parts[1]), w > 0, h > 0,
              w <= PlaylistNumber.largestDimension, h <= PlaylistNumber.largestDimension else { return nil }
        width = w
        height = h
    }

    public var description: String { "\(width)x\(height)" }
}

/// One EXT-X-STREAM-INF and its URI line.
public struct VariantStream: Sendable, Equatable {
    /// Peak segment bit rate, bits per second.
    public var bandwidth: Int
    public var averageBandwidth: Int?
    public var resolution: Resolution?
    public var frameRate: Double?
    public var codecs: String?
    /// GROUP-ID of the EXT-X-MEDIA audio renditions this variant plays with (AUDIO=).
    public var audioGroup: String?
    public var uri: String
    /// Line of the EXT-X-STREAM-INF tag in the parsed text (0 when built in code).
    public var line: Int

    public init(bandwidth: Int, averageBandwidth: Int? = nil, resolution: Resolution? = nil, frameRate: Double? = nil,
                codecs: String? = nil, audioGroup: String? = nil, uri: String, line: Int = 0) {
        self.audioGroup = audioGroup
        self.bandwidth = bandwidth
        self.averageBandwidth = averageBandwidth
        self.resolution = resolution
        self.frameRate = frameRate
        self.codecs = codecs
        self.uri = uri
        self.line = line
    }
}

/// One EXT-X-MEDIA tag (RFC 8216 §4.3.4.1): an alternative rendition, here an audio track that
/// every variant of its group plays alongside its video.
public struct AlternativeRendition: Sendable, Equatable {
    public enum Kind: String, Sendable { case audio = "AUDIO", subtitles = "SUBTITLES" }
    public var kind: Kind
    public var groupID: String
    public var name: String
    public var language: String?
    public var isDefault: Bool
    public var autoselect: Bool
    /// Channel count (CHANNELS=), for audio.
    public var channels: Int?
    public var uri: String

    public init(kind: Kind = .audio, groupID: String, name: String, language: String? = nil, isDefault: Bool = true,
                autoselect: Bool = true, channels: Int? = nil, uri: String) {
        (self.kind, self.groupID, self.name, self.language) = (kind, groupID, name, language)
        (self.isDefault, self.autoselect, self.channels, self.uri) = (isDefault, autoselect, channels, uri)
    }
}

/// A Master Playlist (RFC 8216 §4.3.4): the variants of one presentation.
public struct MasterPlaylist: Sendable, Equatable {
    public var version: Int?
    public var independentSegments: Bool
    /// EXT-X-MEDIA renditions (written before the variants).
    public var media: [AlternativeRendition]
    public var variants: [VariantStream]

    public init(version: Int? = nil, independentSegments: Bool = false, media: [AlternativeRendition] = [],
                variants: [VariantStream] = []) {
        self.version = version
        self.independentSegments = independentSegments
        self.media = media
        self.variants = variants
    }

    /// The playlist text. Variants are written in the given order (players pick the first to start).
    public func render() -> String {
        var out = "#EXTM3U\n"
        if let version { out += "#EXT-X-VERSION:\(version)\n" }
        if independentSegments { out += "#EXT-X-INDEPENDENT-SEGMENTS\n" }
        for m in media {
            var attributes = ["TYPE=\(m.kind.rawValue)", "GROUP-ID=\"\(m.groupID)\"", "NAME=\"\(m.name)\""]
            if let language = m.language { attributes.append("LANGUAGE=\"\(language)\"") }
            attributes.append("DEFAULT=\(m.isDefault ? "YES" : "NO")")
            attributes.append("AUTOSELECT=\(m.autoselect ? "YES" : "NO")")
            if let channels = m.channels { attributes.append("CHANNELS=\"\(channels)\"") }
            if !m.uri.isEmpty { attributes.append("URI=\"\(m.uri)\"") }
            out += "#EXT-X-MEDIA:" + attributes.joined(separator: ",") + "\n"
        }
        for v in variants {
            var attributes = ["BANDWIDTH=\(v.bandwidth)"]
            if let average = v.averageBandwidth { attributes.append("AVERAGE-BANDWIDTH=\(average)") }
            if let resolution = v.resolution { attributes.append("RESOLUTION=\(resolution)") }
            if let rate = v.frameRate { attributes.append("FRAME-RATE=\(HLSNumber.decimal(rate, places: 3))") }
            if let codecs = v.codecs { attributes.append("CODECS=\"\(codecs)\"") }
            if let group = v.audioGroup { attributes.append("AUDIO=\"\(group)\"") }
            out += "#EXT-X-STREAM-INF:" + attributes.joined(separator: ",") + "\n"
            out += v.uri + "\n"
        }
        return out
    }
}
