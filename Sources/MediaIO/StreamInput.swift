import CFFmpeg
import CFFmpegLog
import Foundation
import HLSClient

/// A pushed or streamed live input — RTMP (a listener, as `ffmpeg -listen 1`), SRT (listener or
/// caller), MPEG-TS over UDP, RTSP pulled — through FFmpeg's own protocols and demuxers (an SRT
/// listener's port through `SRTListener`, which keeps it open for the input's life). Its
/// timeline is one: a publisher that reconnects (OBS does at every network hiccup) or restarts its
/// clock is mapped onto the first connection's streams and continues where the last picture ended
/// (`TimelineStitcher`). With `reconnects` (a channel that outlives its input) a connection that
/// ends is opened again — a listener takes the next publisher — instead of ending the input.
/// Owns every context it opens; the first stays open (its streams describe the input) until the end.
final class StreamInput: PacketSource {
    let url: String
    let first: UnsafeMutablePointer<AVFormatContext>
    var context: UnsafeMutablePointer<AVFormatContext> { first }
    var formatName: String { String(cString: first.pointee.iformat.pointee.name) }
    var duration: Double? { nil }
    var isLive: Bool { true }
    private var current: UnsafeMutablePointer<AVFormatContext>
    private var stitcher: TimelineStitcher
    private let options: InputOptions
    private let interrupt: InputInterrupt
    private let warnings: InputWarningLog
    /// Open the input again when its connection ends (set from the plan: `--on-input-loss hold|slate`).
    var reconnects = false
    /// Connections after the first.
    private(set) var reconnections = 0
    /// UDP or RTP: no connection to open again, the bound socket waits for the sender.
    private var isDatagram: Bool { ["udp", "rtp"].contains(scheme) }
    private var waitingForSender = false
    /// An SRT listener's port, kept for the input's life (`SRTListener`); nil for other inputs.
    private let srt: SRTListener?
    /// SCTE-35 sections (MPEG-TS over UDP or SRT), moved with the connection's packets.
    private var splices = SpliceSectionReader()

    /// The schemes read this way.
    static func handles(_ url: String) -> Bool {
        guard let scheme = url.split(separator: ":", maxSplits: 1).first?.lowercased() else { return false }
        return ["rtmp", "rtmps", "srt", "udp", "rtp", "rtsp", "rtsps"].contains(scheme)
    }

    private var scheme: String { url.split(separator: ":", maxSplits: 1).first?.lowercased() ?? "" }

    init(url: String, options: InputOptions, interrupt: InputInterrupt, warnings: InputWarningLog) throws(MediaError) {
        self.url = url
        self.options = options
        self.interrupt = interrupt
        self.warnings = warnings
        try Self.checkAuthentication(url, options: options)
        if url.lowercased().hasPrefix("srt://"), Self.isListener(url, options: options) {
            let srt = try SRTListener(url: url, ioTimeout: options.ioTimeout, interrupt: interrupt, warnings: warnings)
            self.srt = srt
            first = try Self.publisher(on: srt, options: options, interrupt: interrupt, warnings: warnings)
        } else {
            srt = nil
            first = try Self.connect(url, options: options, interrupt: interrupt, warnings: warnings,
                                     waitingForPublisher: Self.isListener(url, options: options))
        }
        current = first
        stitcher = TimelineStitcher(first: first)
    }

    deinit {
        if current != first { Self.close(current) }
        Self.close(first)
    }

    /// Closes a connection's demuxer (and its AVIO, an SRT listener's).
    private static func close(_ ctx: UnsafeMutablePointer<AVFormatContext>) { CustomIODemuxer.close(ctx) }

    /// The next publisher on an SRT listener, with its streams probed: one that sends no video, or
    /// too little to read within three --io-timeouts (a byte a second), is refused with a warning
    /// and the next is waited for.
    private static func publisher(on srt: SRTListener, options: InputOptions, interrupt: InputInterrupt,
                                  warnings: InputWarningLog, again: Bool = false) throws(MediaError) -> UnsafeMutablePointer<AVFormatContext> {
        let c = options.ioTimeout.components
        let ioMicros = c.seconds * 1_000_000 + c.attoseconds / 1_000_000_000_000
        while true {
            let peer = try srt.nextPublisher()
            lf_interrupt_arm(interrupt.state, 3 * ioMicros)
            let opened = openDemuxer(on: srt, maxPixels: options.maxPixels, again: again, interrupt: interrupt.state)
            let expired = lf_interrupt_expired(interrupt.state) != 0
            lf_interrupt_arm(interrupt.state, 0)
            if interrupt.isStopped { throw .inputUnreadable(srt.url, reason: "reading was stopped") }
            switch opened {
            case let .success(ctx): return ctx
            case let .failure(reason):
                srt.closeCurrent()
                warnings.add("a publisher on \(srt.url.forMessages) from \(peer) was refused: \(expired ? "it sent too little to read in time" : reason); waiting for the next")
            }
        }
    }

    private enum Opened { case success(UnsafeMutablePointer<AVFormatContext>), failure(String) }

    /// A demuxer on the listener's current connection: MPEG-TS, SRT's payload.
    private static func openDemuxer(on srt: SRTListener, maxPixels: Int, again: Bool, interrupt: UnsafeMutablePointer<lf_interrupt_state>) -> Opened {
        let opened = CustomIODemuxer.open(source: srt, read: { opaque, buf, size in
            Unmanaged<SRTListener>.fromOpaque(opaque!).takeUnretainedValue().read(buf!, size)
        }, name: srt.url, format: av_find_input_format("mpegts"), options: again ? [("fpsprobesize", "0")] : [],
           maxPixels: maxPixels, interrupt: interrupt)
        switch opened {
        case let .success(ctx):
            let video = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
            guard video >= 0, (ctx.pointee.streams[Int(video)]?.pointee.codecpar.pointee.width ?? 0) > 0 else {
                close(ctx)
                return .failure("it sends no video")
            }
            return .success(ctx)
        case .failure(.outOfMemory): return .failure("out of memory")
        case let .failure(.opening(code)): return .failure(FFmpegError(code: code, operation: "opening").reason)
        case let .failure(.probing(code)): return .failure(FFmpegError(code: code, operation: "probing").reason)
        }
    }

    /// Whether the input waits for a publisher (RTMP with `--listen`, SRT `mode=listener`, UDP).
    static func isListener(_ url: String, options: InputOptions) -> Bool {
        let lower = url.lowercased()
        if lower.hasPrefix("rtmp://") { return options.listen }
        if lower.hasPrefix("srt://") { return lower.contains("mode=listener") }
        return lower.hasPrefix("udp://") || lower.hasPrefix("rtp://")
    }

    /// A listener off loopback must know its publisher (an RTMP stream key, an SRT passphrase)
    /// unless `--listen-unauthenticated` says anyone who reaches the port may publish.
    static func checkAuthentication(_ url: String, options: InputOptions) throws(MediaError) {
        guard isListener(url, options: options), !options.listenUnauthenticated,
              let parts = URLComponents(string: url), let host = parts.host else { return }
        let loopback = host == "localhost" || host.hasPrefix("127.") || host == "::1" || host == "[::1]"
        if loopback { return }
        let lower = url.lowercased()
        if lower.hasPrefix("rtmp://") {
            // rtmp://HOST:PORT/APP/KEY: the key is the last path component after the app.
            let path = parts.path.split(separator: "/")
            if path.count >= 2 { return }
            throw .invalidSettings("listening on \(host) for RTMP without a stream key (rtmp://\(host):PORT/APP/KEY): anyone who can reach the port could publish; add a key, or pass --listen-unauthenticated")
        }
        if lower.hasPrefix("srt://") {
            if (parts.queryItems ?? []).contains(where: { $0.name == "passphrase" && ($0.value ?? "").count >= 10 }) { return }
            throw .invalidSettings("listening on \(host) for SRT without a passphrase (…&passphrase=10 to 79 characters): anyone who can reach the port could publish; add one, or pass --listen-unauthenticated")
        }
        throw .invalidSettings("listening on \(host) for \(lower.hasPrefix("udp") ? "UDP" : "RTP"), which has no authentication: anyone who can reach the port could publish; listen on 127.0.0.1, or pass --listen-unauthenticated")
    }

    /// Seconds a listener waits for a publisher in one open before it looks again (a stop is seen
    /// at once anyway: the interrupt callback).
    private static let acceptWait = 5

    /// Opens one connection: a listener waits for a publisher that sends video (others — a wrong
    /// key, only audio, garbage, a handshake that does not finish — are refused with a warning and
    /// the next is waited for); a caller connects once.
    /// - Parameter again: a reconnection: the streams' parameters are all it needs (the frame rate
    ///   was planned from the first connection), so the probe does not also count frames for a rate
    ///   (20 of them by default: 0.7 s at 30 fps before the channel is back).
    private static func connect(_ url: String, options: InputOptions, interrupt: InputInterrupt, warnings: InputWarningLog,
                                waitingForPublisher: Bool, again: Bool = false) throws(MediaError) -> UnsafeMutablePointer<AVFormatContext> {
        let c = options.ioTimeout.components
        let ioMicros = c.seconds * 1_000_000 + c.attoseconds / 1_000_000_000_000
        let lower = url.lowercased()
        // A caller (RTSP pulled, an SRT caller, RTMP from a server) whose server is down fails at
        // once, and would try again thousands of times a second (measured: 4,854 connects in 3 s
        // and a whole core while an RTSP server restarted): it waits between attempts instead.
        let caller = !isListener(url, options: options)
        var failures = 0
        func failed(_ reason: String) throws(MediaError) {
            failures += 1
            let delay = RetryPolicy.reconnect.delay(afterFailures: failures)
            if failures == 1 {
                warnings.add("\(url.forMessages): cannot connect (\(reason)); trying again, every 2 s at most")
            } else if failures % 30 == 0 {
                warnings.add("\(url.forMessages): still cannot connect after \(failures) attempts (\(reason)); trying again every 2 s")
            }
            // Woken by a stop, not by looking at the flag.
            if interrupt.sleep(until: .now.advanced(by: delay)) {
                throw .inputUnreadable(url, reason: "reading was stopped")
            }
        }
        while true {
            if interrupt.isStopped { throw .inputUnreadable(url, reason: "reading was stopped") }
            var dict: OpaquePointer? = nil
            defer { av_dict_free(&dict) }
            av_dict_set(&dict, "protocol_whitelist", "rtmp,rtmps,tcp,tls,srt,udp,rtp,rtsp,rtsps,http,https,httpproxy", 0)
            if again { av_dict_set(&dict, "fpsprobesize", "0", 0) }
            if lower.hasPrefix("rtmp://") {
                if options.listen {
                    av_dict_set(&dict, "listen", "1", 0)
                    av_dict_set(&dict, "timeout", String(acceptWait), 0)  // seconds, the accept only
                }
                av_dict_set(&dict, "rw_timeout", String(ioMicros), 0)
            } else if lower.hasPrefix("srt://") {
                if waitingForPublisher { av_dict_set(&dict, "listen_timeout", String(acceptWait * 1_000_000), 0) }
                av_dict_set(&dict, "timeout", String(ioMicros), 0)
            } else if lower.hasPrefix("udp://") || lower.hasPrefix("rtp://") {
                av_dict_set(&dict, "timeout", String(ioMicros), 0)
                av_dict_set(&dict, "overrun_nonfatal", "1", 0)
                av_dict_set(&dict, "fifo_size", "278876", 0)
            } else {
                av_dict_set(&dict, "timeout", String(ioMicros), 0)  // rtsp: socket I/O, µs
            }
            // The accept, the handshake and the probe must finish within this, however slowly
            // bytes trickle in (a read timeout alone never fires for a byte a second).
            lf_interrupt_arm(interrupt.state, Int64(acceptWait) * 1_000_000 + 3 * ioMicros)
            _ = lf_log_take_rtmp_refusal()
            var ctx: UnsafeMutablePointer<AVFormatContext>? = avformat_alloc_context()
            guard ctx != nil else { throw .inputUnreadable(url, reason: "out of memory") }
            lf_set_interrupt(ctx, interrupt.state)
            let code = avformat_open_input(&ctx, url, nil, &dict)
            let expired = lf_interrupt_expired(interrupt.state) != 0
            if code < 0 || ctx == nil {
                lf_interrupt_arm(interrupt.state, 0)
                if interrupt.isStopped { throw .inputUnreadable(url, reason: "reading was stopped") }
                let error = FFmpegError(code: code, operation: "opening")
                if !waitingForPublisher {
                    if code == lf_averror_invaliddata() { throw .notMediaFile(url, reason: error.reason) }
                    throw .inputUnreadable(url, reason: expired ? "it did not open within \(acceptWait + 3 * Int(ioMicros / 1_000_000)) s" : error.reason)
                }
                // The port cannot be had (taken, not ours, no such address): no publisher can come.
                if [EADDRINUSE, EACCES, EADDRNOTAVAIL, EINVAL, EPERM].map(lf_averror).contains(code) {
                    throw .inputUnreadable(url, reason: "cannot listen there: " + error.reason)
                }
                if caller {
                    try failed(expired ? "it did not open within \(acceptWait + 3 * Int(ioMicros / 1_000_000)) s" : error.reason)
                    continue
                }
                // Nobody came within the accept's wait: look again. Anything else was a publisher
                // that failed before it sent a picture.
                if code != lf_averror(ETIMEDOUT) || expired {
                    warnings.add("a publisher on \(url.forMessages) was refused: \(expired ? "its handshake did not finish in time" : error.reason); waiting for the next")
                }
                continue
            }
            let opened = ctx!
            let info = probeStreams(opened, maxPixels: options.maxPixels)
            let probeExpired = lf_interrupt_expired(interrupt.state) != 0
            lf_interrupt_arm(interrupt.state, 0)
            // FFmpeg's RTMP server says so when the publisher's app or stream name is not the URL's.
            if lf_log_take_rtmp_refusal() != 0 {
                close(opened)
                warnings.add("a publisher on \(url.forMessages) gave another app or stream key than the URL's and was refused; waiting for the next")
                if !waitingForPublisher { throw .inputUnreadable(url, reason: "the server refused the stream key") }
                if caller { try failed("the server refused the stream key") }
                continue
            }
            let video = av_find_best_stream(opened, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
            let hasVideo = video >= 0 && (opened.pointee.streams[Int(video)]?.pointee.codecpar.pointee.width ?? 0) > 0
            if info < 0 || !hasVideo {
                close(opened)
                if interrupt.isStopped { throw .inputUnreadable(url, reason: "reading was stopped") }
                let reason = info < 0 ? (probeExpired ? "it sent too little to read in time" : FFmpegError(code: info, operation: "probing").reason)
                                      : "it sends no video"
                if !waitingForPublisher { throw .notMediaFile(url, reason: reason) }
                if caller {
                    try failed(reason)
                    continue
                }
                warnings.add("a publisher on \(url.forMessages) was refused: \(reason); waiting for the next")
                continue
            }
            return opened
        }
    }

    func takeCues() -> [SourceCue] { splices.take() }

    /// The next packet of the video or audio stream, on the first connection's streams and one
    /// continuous timeline; false at the input's end (a connection that ended, unless `reconnects`).
    func read(into packet: Packet, video: Int, audio: Int?) throws(FFmpegError) -> Demuxer.ReadResult {
        try readPacket(into: packet, video: video, audio: audio) ? .packet : .endOfFile
    }

    private func readPacket(into packet: Packet, video: Int, audio: Int?) throws(FFmpegError) -> Bool {
        while true {
            packet.unref()
            let code = av_read_frame(current, packet.pointer)
            if code < 0 {
                if interrupt.isStopped || code == lf_averror_exit() {
                    throw FFmpegError(code: lf_averror_exit(), operation: "reading \(url)")
                }
                // A publisher that leaves (cleanly or not) ends its connection with EIO, not an end of file.
                guard reconnects else {
                    if code == lf_averror_eof() || code == lf_averror(EIO) || code == lf_averror(ETIMEDOUT) { return false }
                    try check(code, "reading \(url)")
                    return false
                }
                if isDatagram {
                    // UDP has no connection: the socket stays bound and a sender that comes back
                    // just sends again. Read on (each read waits --io-timeout).
                    if !waitingForSender {
                        waitingForSender = true
                        reconnections += 1
                        warnings.add("\(url.forMessages): nothing received for the --io-timeout (\(reconnections.ordinal) time); waiting for the sender to reconnect")
                    }
                    current.pointee.pb.pointee.eof_reached = 0
                    current.pointee.pb.pointee.error = 0
                    continue
                }
                reconnections += 1
                let why = code == lf_averror_eof() || code == lf_averror(EIO) ? "the connection ended" : FFmpegError(code: code, operation: "reading").reason
                let listener = Self.isListener(url, options: options)
                warnings.add("\(url.forMessages): \(why) (\(reconnections.ordinal) time); \(listener ? "waiting for the publisher to reconnect" : "connecting again")")
                let next: UnsafeMutablePointer<AVFormatContext>
                do {
                    if let srt {
                        next = try Self.publisher(on: srt, options: options, interrupt: interrupt, warnings: warnings, again: true)
                    } else {
                        next = try Self.connect(url, options: options, interrupt: interrupt, warnings: warnings,
                                            waitingForPublisher: true, again: true)
                    }
                } catch {
                    throw FFmpegError(code: lf_averror_exit(), operation: "reading \(url): \(error)")
                }
                if current != first { Self.close(current) }
                current = next
                try stitcher.adopt(next, video: video, audio: audio, newClock: true, what: "the new connection to \(url.forMessages)")
                warnings.add("\(url.forMessages): \(listener ? "a publisher connected again" : "connected again") (\(reconnections.ordinal) time): the timeline goes on")
                continue
            }
            // The last pictures of a connection that went silent and ended: long past, not a return.
            if srt?.endedStale == true { continue }
            if stitcher.streamMap[packet.streamIndex] == nil, current != first {
                // A stream the probe did not wait for (a reconnection probes only what it needs).
                let inner = packet.streamIndex
                if let type = current.pointee.streams[inner]?.pointee.codecpar.pointee.codec_type {
                    let outer = type == AVMEDIA_TYPE_VIDEO ? video : type == AVMEDIA_TYPE_AUDIO ? (audio ?? -1) : -1
                    if outer >= 0 { _ = stitcher.mapLate(inner, of: current, onto: outer) }
                }
            }
            if SpliceSectionReader.isSpliceStream(current, packet.streamIndex), let tb = first.pointee.streams[video]?.pointee.time_base {
                splices.read(packet, videoTimeBase: tb, shiftMicros: stitcher.offset)
                continue
            }
            guard let outer = stitcher.streamMap[packet.streamIndex], outer == video || outer == audio else { continue }
            waitingForSender = false
            stitcher.remap(packet, from: current, to: outer)
            if let shift = stitcher.followClockJump(packet, stream: outer) {
                warnings.add("\(url.forMessages): the timestamps jumped by \(String(format: "%.1f", Double(-shift) / 1e6)) s (the publisher restarted its clock): the timeline goes on")
            }
            if outer == video {
                stitcher.noteTimeline(packet, stream: outer)
                splices.noteVideo(pts: packet.presentationTimestamp, shiftMicros: stitcher.offset)
            }
            return true
        }
    }
}

extension Int {
    /// 1st, 2nd, 3rd, 4th…
    var ordinal: String {
        let suffix = (11...13).contains(self % 100) ? "th" : [1: "st", 2: "nd", 3: "rd"][self % 10] ?? "th"
        return "\(self)\(suffix)"
    }
}
