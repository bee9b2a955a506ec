import Foundation
import struct Filters.FrameSize
import HLS

/// One rendition as the master playlist lists it: measured bit rates, size, rate and codecs.
public struct HLSRendition: Sendable, Equatable {
    /// The media playlist, relative to the master playlist.
    public var uri: String
    /// BANDWIDTH: the peak segment bit rate measured while writing.
    public var peakBitRate: Int
    /// AVERAGE-BANDWIDTH.
    public var averageBitRate: Int
    public var resolution: FrameSize?
    public var frameRate: Rational?
    /// RFC 6381, e.g. `avc1.64001e,mp4a.40.2`.
    public var codecs: String
    /// The EXT-X-MEDIA audio group this rendition plays with (AUDIO=).
    public var audioGroup: String?

    public init(uri: String, peakBitRate: Int, averageBitRate: Int, resolution: FrameSize?, frameRate: Rational?, codecs: String) {
        self.uri = uri
        self.peakBitRate = peakBitRate
        self.averageBitRate = averageBitRate
        self.resolution = resolution
        self.frameRate = frameRate
        self.codecs = codecs
    }
}

/// Writes a master playlist listing renditions in the given order; each version is an `AtomicFile`.
///
/// Life cycle (`OutputArtifact`): `init` checks the destination; `publish` writes the master during
/// the run when its renditions publish as they go (event and live: players may start before the
/// end), and does nothing for VOD; `commit` writes the final master. `discard` leaves a published
/// master in place (its renditions stay listed and end with EXT-X-ENDLIST, see `HLSWriter`); a VOD
/// master is never visible before `commit`.
public final class MasterPlaylistWriter: OutputArtifact {
    public let path: String
    public var displayPath: String { path }
    /// Whether `publish` writes the master before `commit`.
    public let publishesDuringRun: Bool
    /// The renditions to list, set before `publish` and `commit` (measured bit rates come in as the
    /// renditions are written).
    public var renditions: [HLSRendition] = []
    /// EXT-X-MEDIA renditions (a ladder's audio).
    public var media: [AlternativeRendition] = []
    /// What the master says of closed captions in the renditions' video (the plan's decision).
    public var closedCaptions: ClosedCaptionDeclaration = .unknown
    private var committed = false

    /// Checks the destination; creates nothing.
    public init(path: String, overwrite: Bool, publishesDuringRun: Bool, closedCaptions: ClosedCaptionDeclaration = .unknown) throws(MediaError) {
        try AtomicFile.checkDestination(path, overwrite: overwrite)
        self.closedCaptions = closedCaptions
        self.path = path
        self.publishesDuringRun = publishesDuringRun
    }

    /// The playlist text: EXT-X-VERSION 1 (no attribute we use needs more: RFC 8216 §7 keeps
    /// EXT-X-MEDIA and AUDIO= compatible with version 1), EXT-X-INDEPENDENT-SEGMENTS
    /// (every rendition livefilter writes starts each segment with a keyframe), one EXT-X-STREAM-INF each.
    /// A peak is a peak: BANDWIDTH is never below AVERAGE-BANDWIDTH. Closed captions, when the
    /// plan knows of services: one EXT-X-MEDIA each in group "cc" (the first the default) and
    /// CLOSED-CAPTIONS="cc" on every variant (every rung carries the same captions); when it
    /// knows there are none, CLOSED-CAPTIONS=NONE on every variant; else nothing (may have).
    public static func render(_ renditions: [HLSRendition], media: [AlternativeRendition] = [],
                              closedCaptions: ClosedCaptionDeclaration = .unknown) -> String {
        var media = media
        let captions: VariantStream.ClosedCaptions?
        switch closedCaptions {
        case let .services(ids) where !ids.isEmpty:
            media += ids.enumerated().map { AlternativeRendition.closedCaptions(groupID: "cc", instreamID: $1, isDefault: $0 == 0) }
            captions = .group("cc")
        case .services, .none: captions = VariantStream.ClosedCaptions.none
        case .unknown: captions = nil
        }
        // INSTREAM-ID="SERVICEn" (CEA-708) needs version 7 (RFC 8216 §7); nothing else we write needs more than 1.
        let version = media.contains { $0.instreamID?.hasPrefix("SERVICE") == true } ? 7 : 1
        return MasterPlaylist(version: version, independentSegments: true, media: media, variants: renditions.map { r in
            VariantStream(bandwidth: max(r.peakBitRate, r.averageBitRate), averageBandwidth: r.averageBitRate,
                          resolution: r.resolution.map { Resolution(width: $0.width, height: $0.height) },
                          frameRate: r.frameRate?.doubleValue, codecs: r.codecs.isEmpty ? nil : r.codecs,
                          audioGroup: r.audioGroup, closedCaptions: captions, uri: r.uri)
        }).render()
    }

    /// Nothing to create: the master is one small file, written whole.
    public func begin() throws(MediaError) {}

    /// Event and live: writes the master now. VOD: nothing until `commit`.
    public func publish() throws(MediaError) {
        guard publishesDuringRun, !committed else { return }
        try write()
    }

    public func commit() throws(MediaError) {
        guard !committed else { return }
        try write()
        committed = true
    }

    /// Nothing unfinished is ever on disk: every version is written whole.
    public func discard() {}

    private func write() throws(MediaError) {
        guard !renditions.isEmpty else { throw .invalidSettings("a master playlist needs at least one rendition") }
        try AtomicFile.write(Array(Self.render(renditions, media: media, closedCaptions: closedCaptions).utf8), to: path, displayPath: path)
    }
}
