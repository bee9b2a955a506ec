import CFFmpeg
import Foundation

/// One video packet of an input, as the shard planner needs it: where a decoder can start and
/// which frames come from there. Times are in the video stream's time base, as the container gives them.
public struct VideoPacketFacts: Sendable, Equatable {
    public var pts: Int64?
    public var dts: Int64?
    public var isKeyframe: Bool
    public var size: Int
}

extension Demuxer {
    /// Every video packet's timestamps and keyframe flag, in file order (audio is not read). Reads the
    /// whole input without decoding; the demuxer is left at its end.
    public func scanVideoPackets() throws(MediaError) -> [VideoPacketFacts] {
        if let audio { stream(audio.index).pointee.discard = AVDISCARD_ALL }
        defer { if let audio { stream(audio.index).pointee.discard = AVDISCARD_DEFAULT } }
        let packet = Packet()
        var facts: [VideoPacketFacts] = []
        while true {
            let result: ReadResult
            do { result = try read(into: packet) } catch { throw .processing(error) }
            guard case .packet = result else { break }
            guard packet.streamIndex == video.index else { continue }
            facts.append(VideoPacketFacts(pts: packet.presentationTimestamp, dts: packet.pointer.pointee.dts == lf_nopts_value() ? nil : packet.pointer.pointee.dts,
                                          isKeyframe: packet.isKeyframe, size: packet.size))
        }
        return facts
    }

    /// Moves reading to the video keyframe whose presentation timestamp is `pts` (the video stream's
    /// time base, as the container gives it), or to an earlier one: never later, since a shard's
    /// pictures must all be decodable. Containers index keyframes by decode or presentation time,
    /// and both are at or before `pts`, so a backward seek to it finds that keyframe; where a
    /// container's seek overshoots anyway (checked on the next video packet), it seeks further back.
    public func seekVideo(toKeyframeAt pts: Int64) throws(MediaError) {
        let videoIndex = Int32(video.index)
        let second = Int64((1 / video.timeBase.doubleValue).rounded())
        for back in [Int64(0), 2 * second, 10 * second, 60 * second] {
            let target = pts - back
            if av_seek_frame(context, videoIndex, target, AVSEEK_FLAG_BACKWARD) < 0 {
                if avformat_seek_file(context, videoIndex, .min, target, target, 0) < 0 { continue }
            }
            guard let first = try nextVideoTimestamp() else { continue }
            if first <= pts {
                // Read again from the same place: the check above consumed packets.
                _ = av_seek_frame(context, videoIndex, target, AVSEEK_FLAG_BACKWARD)
                return
            }
        }
        throw .processing(FFmpegError(.inputOutput, operation: "seeking \(url) to the keyframe at \(pts)"))
    }

    /// The presentation timestamp of the next video packet, or nil at the end.
    private func nextVideoTimestamp() throws(MediaError) -> Int64? {
        let packet = Packet()
        while true {
            let result: ReadResult
            do { result = try read(into: packet) } catch { throw .processing(error) }
            guard case .packet = result else { return nil }
            guard packet.streamIndex == video.index else { continue }
            return packet.presentationTimestamp ?? packet.decodeTimestamp
        }
    }

    /// Reads audio only from now on: the video stream's packets are dropped by the demuxer (the
    /// audio task of a sharded job decodes no picture).
    public func discardVideo() {
        stream(video.index).pointee.discard = AVDISCARD_ALL
    }

    /// A fingerprint of the container's own index (MP4 sample tables, Matroska cues), free to read at
    /// open: the entries' positions, timestamps, sizes and flags. Empty when the container keeps no
    /// index (MPEG-TS): callers add other evidence.
    public var indexFingerprint: [UInt8] {
        var hash = FNV1a()
        let st = stream(video.index)
        let count = avformat_index_get_entries_count(st)
        guard count > 0 else { return [] }
        for i in 0..<count {
            guard let e = avformat_index_get_entry(st, i) else { continue }
            hash.add(e.pointee.pos)
            hash.add(e.pointee.timestamp)
            hash.add(Int64(e.pointee.size))
            hash.add(Int64(e.pointee.flags))
        }
        hash.add(Int64(count))
        return hash.bytes
    }
}

/// FNV-1a, 64 bits: a change detector for indexes and file ends (not a cryptographic hash).
public struct FNV1a: Sendable {
    public private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    public init() {}

    public mutating func add<S: Sequence>(bytes: S) where S.Element == UInt8 {
        for b in bytes {
            value ^= UInt64(b)
            value &*= 0x0000_0100_0000_01b3
        }
    }

    public mutating func add(_ v: Int64) {
        withUnsafeBytes(of: v.littleEndian) { add(bytes: $0) }
    }

    public var bytes: [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }
    public var hex: String { String(format: "%016llx", value) }
}
