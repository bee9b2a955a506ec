import Foundation
import Filters
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

    public init(uri: String, peakBitRate: Int, averageBitRate: Int, resolution: FrameSize?, frameRate: Rational?, codecs: String) {
        self.uri = uri
        self.peakBitRate = peakBitRate
        self.averageBitRate = averageBitRate
        self.resolution = resolution
        self.frameRate = frameRate
        self.codecs = codecs
    }
}

/// Writes a master playlist (atomically, mode 0644) listing renditions in the given order.
public struct MasterPlaylistWriter: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// The playlist text: EXT-X-VERSION 1 (no attribute we use needs more), EXT-X-INDEPENDENT-SEGMENTS
    /// (every rendition livefilter writes starts each segment with a keyframe), one EXT-X-STREAM-INF each.
    public static func render(_ renditions: [HLSRendition]) -> String {
        MasterPlaylist(version: 1, independentSegments: true, variants: renditions.map { r in
            VariantStream(bandwidth: r.peakBitRate, averageBandwidth: r.averageBitRate,
                          resolution: r.resolution.map { Resolution(width: $0.width, height: $0.height) },
                          frameRate: r.frameRate?.doubleValue, codecs: r.codecs.isEmpty ? nil : r.codecs, uri: r.uri)
        }).render()
    }

    public func write(_ renditions: [HLSRendition]) throws(MediaError) {
        guard !renditions.isEmpty else { throw .invalidSettings("a master playlist needs at least one rendition") }
        try AtomicFile.write(Self.render(renditions), to: path)
    }
}
