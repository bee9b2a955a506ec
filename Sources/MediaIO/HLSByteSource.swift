import CFFmpeg
import Foundation
import HLSClient

/// AES-128-CBC decryption of one segment as its bytes arrive (libavutil's AES), PKCS7 padding
/// removed at the segment's end. Owns its `AVAES`.
final class AES128CBCDecryptor {
    private let context: OpaquePointer
    private var iv: [UInt8]
    private var carry: [UInt8] = []
    /// The last decrypted block, held back until the end: it carries the padding.
    private var held: [UInt8] = []

    init?(_ parameters: AESParameters) {
        guard parameters.key.count == 16, parameters.iv.count == 16, let aes = av_aes_alloc() else { return nil }
        context = aes
        iv = parameters.iv
        let code = parameters.key.withUnsafeBufferPointer { av_aes_init(aes, $0.baseAddress, 128, 1) }
        if code < 0 { av_free(UnsafeMutableRawPointer(aes)); return nil }
    }

    deinit { av_free(UnsafeMutableRawPointer(context)) }

    func update(_ input: [UInt8]) -> [UInt8] {
        carry.append(contentsOf: input)
        let blocks = carry.count / 16
        guard blocks > 0 else { return [] }
        var plain = [UInt8](repeating: 0, count: blocks * 16)
        carry.withUnsafeBufferPointer { src in
            plain.withUnsafeMutableBufferPointer { dst in
                iv.withUnsafeMutableBufferPointer { ivp in
                    av_aes_crypt(context, dst.baseAddress, src.baseAddress, Int32(blocks), ivp.baseAddress, 1)
                }
            }
        }
        carry.removeFirst(blocks * 16)
        let out = held + plain.dropLast(16)
        held = Array(plain.suffix(16))
        return out
    }

    /// The held-back block, without its padding when the segment is `complete`.
    func finish(complete: Bool) -> [UInt8] {
        defer { held = []; carry = [] }
        guard complete, let pad = held.last, (1...16).contains(Int(pad)), held.suffix(Int(pad)).allSatisfy({ $0 == pad }) else {
            return held
        }
        return Array(held.dropLast(Int(pad)))
    }

    static func decrypt(_ bytes: [UInt8], _ parameters: AESParameters) -> [UInt8]? {
        guard let d = AES128CBCDecryptor(parameters) else { return nil }
        return d.update(bytes) + d.finish(complete: true)
    }
}

/// The HLS reader's feed as the byte stream of one demuxer at a time. Consecutive segments of one
/// timeline with one initialization section are one "run", read by one demuxer as a continuous
/// stream (MPEG-TS and fMP4 fragments both concatenate); a discontinuity, a new EXT-X-MAP or a cut
/// (`FeedSegment.restart`) ends the run, and the demuxer is opened again on the next.
final class HLSByteSource {
    let reader: HLSReader
    /// The header that begins the next run, read ahead of its run's end.
    private var pendingHeader: FeedSegment?
    private(set) var header: FeedSegment?
    private var runEnded = false
    private var buffer: [UInt8] = []
    private var bufferOffset = 0
    private var decryptor: AES128CBCDecryptor?
    /// Bytes handed to the current run's demuxer so far: the position FFmpeg gives packets.
    private var produced: Int64 = 0
    /// Where each segment of the current run starts in its byte stream.
    private(set) var segmentStarts: [(position: Int64, header: FeedSegment)] = []
    /// How the feed ended, once it has.
    private(set) var end: ByteFeed.End?
    /// Whether a segment's end that the network has not yet followed ends the demuxer's reading for
    /// now (`AVERROR_EOF`, then `pausedAtSegmentEnd`): MPEG-TS holds a stream's last PES (and the
    /// parser its last frame) until the next bytes come, which on a live input is a segment later.
    /// At an end of file the demuxer flushes both; the caller then clears the AVIO's EOF and reads on.
    var pausesAtSegmentEnds = false
    /// The read that just returned `AVERROR_EOF` did so at a segment's end (or an LL-HLS part's:
    /// `pausedAtPartEnd`), not the run's.
    var pausedAtSegmentEnd = false
    var pausedAtPartEnd = false
    private var afterSegmentEnd = false, afterPartEnd = false

    init(reader: HLSReader) {
        self.reader = reader
    }

    /// Begins the next run; nil when the feed has ended.
    func beginRun() -> FeedSegment? {
        runEnded = false
        buffer = []
        bufferOffset = 0
        produced = 0
        segmentStarts = []
        decryptor = nil
        var first = pendingHeader
        pendingHeader = nil
        while first == nil {
            switch reader.feed.next() {
            case let .item(.segment(h)): first = h
            case .item: continue  // bytes of a segment whose header ended the previous run cannot occur
            case let .end(how): end = how; return nil
            }
        }
        start(first!)
        if let initialization = first!.initialization {
            let bytes = initialization.aes128.flatMap { AES128CBCDecryptor.decrypt(initialization.bytes, $0) } ?? initialization.bytes
            append(bytes)
            segmentStarts[segmentStarts.count - 1].position = produced
        }
        return first
    }

    private func start(_ h: FeedSegment) {
        header = h
        decryptor = h.aes128.flatMap { AES128CBCDecryptor($0) }
        segmentStarts.append((produced, h))
        // A live run lasts hours: keep the last few starts (the demuxer reads a few segments behind at most).
        if segmentStarts.count > 64 { segmentStarts.removeFirst(segmentStarts.count - 32) }
    }

    private func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        if bufferOffset == buffer.count { buffer = bytes; bufferOffset = 0 } else { buffer.append(contentsOf: bytes) }
        produced += Int64(bytes.count)
    }

    /// Whether a header ends the current run.
    private func startsRun(_ h: FeedSegment) -> Bool {
        guard let current = header else { return true }
        if h.restart || h.discontinuitySequence != current.discontinuitySequence { return true }
        return h.initialization != nil && h.initialization?.identity != current.initialization?.identity
    }

    /// Whether another run follows the one that just ended.
    var hasNextRun: Bool { pendingHeader != nil }

    /// The AVIO read: up to `size` bytes into `destination`; `AVERROR_EOF` at the run's end.
    func read(_ destination: UnsafeMutablePointer<UInt8>, _ size: Int32) -> Int32 {
        while bufferOffset == buffer.count {
            // AVIO asks again after an end of file: the pause lasts until the demuxer has given up
            // everything (`av_read_frame` returned the end) and the caller has cleared it.
            if runEnded || pausedAtSegmentEnd { return lf_averror_eof() }
            if afterSegmentEnd || afterPartEnd, pausesAtSegmentEnds, reader.feed.wouldWait {
                pausedAtPartEnd = !afterSegmentEnd
                afterSegmentEnd = false
                afterPartEnd = false
                pausedAtSegmentEnd = true
                return lf_averror_eof()
            }
            afterSegmentEnd = false
            afterPartEnd = false
            switch reader.feed.next() {
            case let .item(.segment(h)):
                if startsRun(h) {
                    pendingHeader = h
                    runEnded = true
                } else {
                    start(h)
                }
            case let .item(.bytes(bytes)):
                append(decryptor.map { $0.update(bytes) } ?? bytes)
            case let .item(.segmentEnd(complete)):
                if let decryptor { append(decryptor.finish(complete: complete)) }
                decryptor = nil
                afterSegmentEnd = true
            case .item(.partEnd):
                afterPartEnd = true
            case let .end(how):
                end = how
                runEnded = true
                if case .cancelled = how { return lf_averror_exit() }
            }
        }
        let n = min(Int(size), buffer.count - bufferOffset)
        buffer.withUnsafeBufferPointer { src in
            destination.update(from: src.baseAddress! + bufferOffset, count: n)
        }
        bufferOffset += n
        return Int32(n)
    }

    /// The segment a byte position of the current run belongs to.
    /// Packets come from near the newest bytes: searched from the end.
    func segment(at position: Int64) -> FeedSegment? {
        segmentStarts.last { $0.position <= position }?.header
    }
}
