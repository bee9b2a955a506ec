import CFFmpeg
import Foundation
import HLS

/// One published segment, with what was measured while writing it.
public struct HLSSegmentRecord: Sendable, Equatable {
    /// Media sequence number (0 for the first segment of the run).
    public var sequence: Int
    /// File name, relative to the playlist's folder.
    public var uri: String
    /// Start of the segment in seconds of the writer's input timeline.
    public var startTime: Double
    /// EXTINF duration in seconds.
    public var duration: Double
    public var bytes: Int
    /// The segment's first video packet is a keyframe.
    public var startsWithKeyframe: Bool
    /// EXT-X-PROGRAM-DATE-TIME (event and live playlists).
    public var programDateTime: Date?
    /// The output tick of the segment's first packet (the cutting stream's time base).
    public var startTick: Int64 = 0
    /// LL-HLS: the segment's parts, in order (their bytes, concatenated, are the segment's).
    public var parts: [HLSPartRecord] = []
    /// The older ad markers before the segment (written with `AdMarkerStyle.cue` or `.both`).
    public var cueMarkers: [CueMarker] = []
    /// The segment's date on the program clock even in a VOD playlist, which states it only when
    /// it carries date ranges.
    var clockDate: Date?
}

/// One LL-HLS part as published: its own file, a moof+mdat (fMP4) or TS packets, of one segment.
public struct HLSPartRecord: Sendable, Equatable {
    /// File name, relative to the playlist's folder.
    public var uri: String
    /// EXT-X-PART DURATION, seconds.
    public var duration: Double
    /// Starts with a keyframe (INDEPENDENT=YES).
    public var independent: Bool
    public var bytes: Int
    /// The output tick of its first and last cutting-stream packet.
    public var firstTick: Int64
    public var lastTick: Int64
}

/// What a rendition's segments measure: the bit rates a master playlist states.
extension HLSWriter {
    /// Largest segment bit rate (bytes × 8 / EXTINF), ignoring a last segment shorter than half the
    /// target when there are others (its rate is noise). RFC 8216's BANDWIDTH.
    public var peakBitRate: Int {
        var considered = segments
        if considered.count > 1, let last = considered.last, last.duration < options.segmentDuration / 2 {
            considered.removeLast()
        }
        let rates = considered.filter { $0.duration > 0 }.map { Double($0.bytes) * 8 / $0.duration }
        return Int((rates.max() ?? 0).rounded(.up))
    }

    /// Total segment bytes × 8 / total duration. RFC 8216's AVERAGE-BANDWIDTH.
    public var averageBitRate: Int {
        let seconds = segments.reduce(0) { $0 + $1.duration }
        guard seconds > 0 else { return 0 }
        return Int((Double(segments.reduce(0) { $0 + $1.bytes }) * 8 / seconds).rounded(.up))
    }

    /// This rendition as a master playlist entry; `uri` is the media playlist relative to the master.
    public func rendition(uri: String) -> HLSRendition {
        HLSRendition(uri: uri, peakBitRate: peakBitRate, averageBitRate: averageBitRate, resolution: resolution,
                     frameRate: frameRate, codecs: codecsString)
    }

    /// RFC 6381 codec string of a stream, from its parameters (extradata), else from a keyframe's bytes.
    static func codecString(of par: AVCodecParameters, keyframe: Packet?) -> String? {
        let extradata: [UInt8] = par.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(par.extradata_size))) } ?? []
        switch par.codec_id {
        case AV_CODEC_ID_H264:
            if let s = CodecStrings.avc1(extradata: extradata) { return s }
            return keyframe.flatMap { CodecStrings.avc1(annexB: $0.bytes) }
        case AV_CODEC_ID_AAC:
            if let s = CodecStrings.mp4a(audioSpecificConfig: extradata) { return s }
            if let s = keyframe.flatMap({ CodecStrings.mp4a(adtsHeader: Array($0.bytes.prefix(7))) }) { return s }
            // FF_PROFILE_AAC_LOW (1) and friends are object type - 1.
            return par.profile >= 0 ? "mp4a.40.\(par.profile + 1)" : "mp4a.40.2"
        default:
            return nil
        }
    }
}
