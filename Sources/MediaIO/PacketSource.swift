import CFFmpeg
import Foundation

/// One kind of input, as `Demuxer` reads it: packets on one timeline, described by the streams of
/// one format context for the input's whole life. Three kinds, one type each:
/// - `FileInput`: what FFmpeg opens itself — a file, a file over the network;
/// - `HLSPlaylistInput`: a playlist read by our HLS reader (with an audio rendition of its own, maybe);
/// - `StreamInput`: a pushed or streamed live input — RTMP, SRT, UDP, RTSP.
///
/// Each is opened on a thread that may block, its `InputInterrupt` made before the open (a stop
/// reaches the open: FFmpeg's interrupt callback, libsrt's epoll, the reader's tasks): from async
/// code, `Demuxer.open` is that open, cancelled with its task. Each kind probes its streams with
/// `probeStreams`, joins the runs of a cut stream with a `TimelineStitcher` (a file has one run),
/// and says what it survives to the run's `InputWarningLog`.
protocol PacketSource: AnyObject {
    /// The context whose streams describe the input (indices, time bases, codec parameters).
    var context: UnsafeMutablePointer<AVFormatContext> { get }
    /// The container's name ("mov,mp4,…", "mpegts", "flv"; "hls" for a playlist).
    var formatName: String { get }
    /// Seconds, when the input has an end that is known.
    var duration: Double? { get }
    /// Whether the input is live (a playlist without an end, a pushed stream).
    var isLive: Bool { get }
    var bitRate: Int? { get }
    /// Whether the source chose its variant itself (an HLS reader, from a master playlist): the
    /// demuxer then leaves the container's programs alone. `variant` is the one chosen, if any.
    var choosesVariant: Bool { get }
    var variant: VariantInfo? { get }
    /// Whether the audio comes from a source of its own (an HLS audio rendition), standing in for
    /// any audio muxed with the video; `separateAudio` is its stream (nil: none usable).
    var hasSeparateAudio: Bool { get }
    var separateAudio: AudioStreamInfo? { get }

    /// A stream by the demuxer's index (a separate audio source's come after the context's).
    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream>
    /// The next packet of `video` or `audio`, on the input's one timeline.
    func read(into packet: Packet, video: Int, audio: Int?) throws(FFmpegError) -> Demuxer.ReadResult

    // What only some kinds have; the others keep the defaults below.
    var sourceClock: SourceClock? { get }
    var targetDuration: Int? { get }
    var hlsStatistics: HLSInputStatistics? { get }
    var refusal: MediaError? { get }
    /// See `Demuxer.marksSegmentEnds`.
    func markSegmentEnds(_ marks: Bool)
    /// See `Demuxer.reconnects`.
    var reconnects: Bool { get set }
    var reconnections: Int { get }
    /// The ad markers read since the last call, in order (see `Demuxer.takeCues`).
    func takeCues() -> [SourceCue]
}

extension PacketSource {
    var choosesVariant: Bool { false }
    var variant: VariantInfo? { nil }
    var hasSeparateAudio: Bool { false }
    var separateAudio: AudioStreamInfo? { nil }
    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream> { context.pointee.streams[index]! }
    var bitRate: Int? { context.pointee.bit_rate > 0 ? Int(context.pointee.bit_rate) : nil }
    var sourceClock: SourceClock? { nil }
    var targetDuration: Int? { nil }
    var hlsStatistics: HLSInputStatistics? { nil }
    var refusal: MediaError? { nil }
    func markSegmentEnds(_ marks: Bool) {}
    var reconnects: Bool {
        get { false }
        set {}
    }
    var reconnections: Int { 0 }
    func takeCues() -> [SourceCue] { [] }
}

extension Demuxer {
    /// Opens the kind of input `url` is: a pushed or streamed URL, a playlist by its name, else
    /// FFmpeg's (a playlist it recognises by content goes to our reader after all).
    static func openSource(_ url: String, isNetwork: Bool, options: InputOptions, interrupt: InputInterrupt,
                           warnings: InputWarningLog) throws(MediaError) -> any PacketSource {
        if StreamInput.handles(url) {
            return try StreamInput(url: url, options: options, interrupt: interrupt, warnings: warnings)
        }
        if HLSPlaylistInput.looksLikePlaylist(url) {
            return try HLSPlaylistInput(url: url, options: options, interrupt: interrupt, warnings: warnings)
        }
        if let file = try FileInput(url: url, isNetwork: isNetwork, options: options, interrupt: interrupt) {
            return file
        }
        return try HLSPlaylistInput(url: url, options: options, interrupt: interrupt, warnings: warnings)
    }

    /// Opens `url` on a thread of its own, so no thread of the cooperative pool blocks on the
    /// network or the disk; cancelling the calling task stops the open wherever it is (a listener
    /// waiting for its publisher, a slow origin, a probe) and it throws. `interrupt` is made first
    /// (by the caller, or here), so a cancellation at any moment reaches it.
    public static func open(url: String, options: InputOptions = InputOptions(),
                            interrupt: InputInterrupt = InputInterrupt()) async throws(MediaError) -> Demuxer {
        // The demuxer goes from its opening thread to the caller, its one owner from then on.
        struct Opened: @unchecked Sendable { let result: Result<Demuxer, MediaError> }
        let opened: Opened = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let thread = Thread {
                    do throws(MediaError) {
                        continuation.resume(returning: Opened(result: .success(try Demuxer(url: url, options: options, interrupt: interrupt))))
                    } catch {
                        continuation.resume(returning: Opened(result: .failure(error)))
                    }
                }
                thread.stackSize = 4 << 20
                thread.start()
            }
        } onCancel: {
            interrupt.stop()
        }
        let result = opened.result
        // An input opened as the stop came is stopped too: it could read nothing.
        if interrupt.isStopped, case .success = result { throw .inputUnreadable(url, reason: "reading was stopped") }
        return try result.get()
    }
}
