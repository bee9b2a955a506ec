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
    /// CLOSED-CAPTIONS= (rfc8216bis §4.4.6.2): the EXT-X-MEDIA closed-caption group carried in
    /// this variant's video, or NONE; nil: the attribute is absent (the video may carry captions).
    public var closedCaptions: ClosedCaptions?
    public var uri: String

    /// The CLOSED-CAPTIONS attribute's value.
    public enum ClosedCaptions: Sendable, Equatable {
        /// A quoted GROUP-ID of EXT-X-MEDIA tags of TYPE=CLOSED-CAPTIONS.
        case group(String)
        /// The enumerated string NONE: no variant of the master carries closed captions.
        case none
    }
    /// Line of the EXT-X-STREAM-INF tag in the parsed text (0 when built in code).
    public var line: Int

    public init(bandwidth: Int, averageBandwidth: Int? = nil, resolution: Resolution? = nil, frameRate: Double? = nil,
                codecs: String? = nil, audioGroup: String? = nil, closedCaptions: ClosedCaptions? = nil, uri: String, line: Int = 0) {
        self.audioGroup = audioGroup
        self.closedCaptions = closedCaptions
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
/// every variant of its group plays alongside its video, or a closed-caption service carried in
/// the video itself (no URI; INSTREAM-ID names it).
public struct AlternativeRendition: Sendable, Equatable {
    public enum Kind: String, Sendable { case audio = "AUDIO", subtitles = "SUBTITLES", closedCaptions = "CLOSED-CAPTIONS" }
    public var kind: Kind
    public var groupID: String
    public var name: String
    public var language: String?
    public var isDefault: Bool
    public var autoselect: Bool
    /// Channel count (CHANNELS=), for audio.
    public var channels: Int?
    /// INSTREAM-ID= of a closed-caption rendition: CC1–CC4 (CEA-608 channels) or SERVICE1–63 (CEA-708).
    public var instreamID: String?
    public var uri: String

    public init(kind: Kind = .audio, groupID: String, name: String, language: String? = nil, isDefault: Bool = true,
                autoselect: Bool = true, channels: Int? = nil, instreamID: String? = nil, uri: String) {
        (self.kind, self.groupID, self.name, self.language) = (kind, groupID, name, language)
        (self.isDefault, self.autoselect, self.channels, self.uri) = (isDefault, autoselect, channels, uri)
        self.instreamID = instreamID
    }

    /// A closed-caption service in the variants' video: `instreamID` CC1–CC4 or SERVICE1–63.
    public static func closedCaptions(groupID: String, instreamID: String, isDefault: Bool) -> AlternativeRendition {
        let name = instreamID.hasPrefix("CC") ? "CEA-608 \(instreamID)" : "CEA-708 \(instreamID)"
        return AlternativeRendition(kind: .closedCaptions, groupID: groupID, name: name, isDefault: isDefault, autoselect: true,
                                    instreamID: instreamID, uri: "")
    }

    /// Whether `id` is a valid INSTREAM-ID for closed captions (rfc8216bis §4.4.6.1).
    public static func isValidInstreamID(_ id: String) -> Bool {
        if ["CC1", "CC2", "CC3", "CC4"].contains(id) { return true }
        guard id.hasPrefix("SERVICE"), let n = Int(id.dropFirst(7)), String(n) == id.dropFirst(7) else { return false }
        return (1...63).contains(n)
    }
}

/// What a master playlist says of closed captions in its variants' video, decided by the plan from
/// what the input told: the services (EXT-X-MEDIA TYPE=CLOSED-CAPTIONS and CLOSED-CAPTIONS="cc" on
/// every variant), none (CLOSED-CAPTIONS=NONE), or unknown (the attribute left out: a player then
/// assumes there may be some, which is the truth for a live source not yet seen).
public enum ClosedCaptionDeclaration: Sendable, Equatable {
    case unknown
    case none
    /// INSTREAM-IDs, in order: CC1–CC4, SERVICE1–63.
    case services([String])
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
            if let id = m.instreamID { attributes.append("INSTREAM-ID=\"\(id)\"") }
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
            switch v.closedCaptions {
            case let .group(id)?: attributes.append("CLOSED-CAPTIONS=\"\(id)\"")
            case .none?: attributes.append("CLOSED-CAPTIONS=NONE")
            case nil: break
            }
            out += "#EXT-X-STREAM-INF:" + attributes.joined(separator: ",") + "\n"
            out += v.uri + "\n"
        }
        return out
    }
}
