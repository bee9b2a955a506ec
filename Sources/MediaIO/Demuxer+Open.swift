import CFFmpeg
import Dispatch
import Foundation
import HLS
import HLSClient

extension Demuxer {
    /// A playlist by its name: our HLS reader opens it. (A playlist by another name is recognised
    /// by FFmpeg's probe and handed over too: `openWithFFmpeg` returns nil.)
    static func looksLikePlaylist(_ url: String) -> Bool {
        let lower = url.lowercased()
        let path = lower.split(separator: "?", maxSplits: 1).first.map(String.init) ?? lower
        return path.hasSuffix(".m3u8") || path.hasSuffix(".m3u") || lower.contains(".m3u8?")
    }

    /// Opens `url` with FFmpeg's own protocols and demuxers, streams probed. Nil when it is an HLS
    /// playlist (FFmpeg's `hls` demuxer is never used: our reader reads playlists).
    static func openWithFFmpeg(_ url: String, isNetwork: Bool, options: InputOptions,
                               interrupt: UnsafeMutablePointer<lf_interrupt_state>) throws(MediaError) -> UnsafeMutablePointer<AVFormatContext>? {
        var ctx: UnsafeMutablePointer<AVFormatContext>? = avformat_alloc_context()
        guard ctx != nil else { throw .inputUnreadable(url, reason: "out of memory") }
        lf_set_interrupt(ctx, interrupt)

        var dict: OpaquePointer? = nil
        defer { av_dict_free(&dict) }
        let c = options.ioTimeout.components
        let micros = c.seconds * 1_000_000 + c.attoseconds / 1_000_000_000_000
        if isNetwork {
            av_dict_set(&dict, "rw_timeout", String(micros), 0)
            av_dict_set(&dict, "protocol_whitelist", options.networkProtocols, 0)
            av_dict_set(&dict, "max_redirects", String(options.maxRedirects), 0)
            av_dict_set(&dict, "reconnect", "1", 0)
            av_dict_set(&dict, "reconnect_on_network_error", "1", 0)
            av_dict_set(&dict, "reconnect_delay_max", "4", 0)
        } else {
            av_dict_set(&dict, "protocol_whitelist", "file,crypto,data," + options.networkProtocols, 0)
        }

        // Opening and probing must finish within a few --io-timeouts, however slowly bytes trickle in.
        if isNetwork { lf_interrupt_arm(interrupt, 3 * micros) }
        let openCode = avformat_open_input(&ctx, url, nil, &dict)
        guard openCode >= 0, let opened = ctx else {
            let expired = lf_interrupt_expired(interrupt) != 0
            let error = FFmpegError(code: openCode, operation: "avformat_open_input")
            if openCode == lf_averror_invaliddata() { throw .notMediaFile(url, reason: error.reason) }
            if expired {
                throw .inputUnreadable(url, reason: "it did not open within \(3 * micros / 1_000_000) s (3 × --io-timeout)")
            }
            if openCode == lf_averror(ENOENT) || openCode == lf_averror_http_not_found() { throw .inputNotFound(url) }
            throw .inputUnreadable(url, reason: error.reason)
        }
        if String(cString: opened.pointee.iformat.pointee.name) == "hls" {
            var c: UnsafeMutablePointer<AVFormatContext>? = opened
            avformat_close_input(&c)
            lf_interrupt_arm(interrupt, 0)
            return nil
        }

        // A size the container's header states is refused before probing: FFmpeg's probe would
        // reset an invalid size (65535x65535) to 0 and report "no video stream" instead.
        let streamCount = Int(opened.pointee.nb_streams)
        for i in 0..<streamCount {
            guard let par = opened.pointee.streams[i]?.pointee.codecpar, par.pointee.codec_type == AVMEDIA_TYPE_VIDEO else { continue }
            let w = Int(par.pointee.width), h = Int(par.pointee.height)
            if w * h > options.maxPixels || w > 16384 || h > 16384 {
                var c: UnsafeMutablePointer<AVFormatContext>? = opened
                avformat_close_input(&c)
                throw .inputTooLarge(url, reason: "its header says \(w)x\(h), over the limit of \(options.maxPixels) pixels (--max-pixels)")
            }
        }
        // Decoders probing the streams refuse pictures over the limit instead of allocating them.
        var probeOptions = [OpaquePointer?](repeating: nil, count: max(1, streamCount))
        for i in 0..<streamCount { av_dict_set(&probeOptions[i], "max_pixels", String(options.maxPixels), 0) }
        let infoCode = probeOptions.withUnsafeMutableBufferPointer { avformat_find_stream_info(opened, $0.baseAddress) }
        for i in 0..<probeOptions.count { av_dict_free(&probeOptions[i]) }
        if infoCode < 0 {
            var c: UnsafeMutablePointer<AVFormatContext>? = opened
            avformat_close_input(&c)
            if lf_interrupt_expired(interrupt) != 0 {
                throw .inputUnreadable(url, reason: "it did not open within \(3 * micros / 1_000_000) s (3 × --io-timeout)")
            }
            throw .notMediaFile(url, reason: FFmpegError(code: infoCode, operation: "avformat_find_stream_info").reason)
        }
        return opened
    }

    /// Opens an HLS playlist with our reader and the demuxer on its first run of segments.
    static func openHLS(_ url: String, options: InputOptions, interrupt: InputInterrupt) throws(MediaError) -> HLSInput {
        var readerOptions = HLSReaderOptions()
        readerOptions.ioTimeout = options.ioTimeout
        readerOptions.maxRedirects = options.maxRedirects
        readerOptions.variant = options.variant
        readerOptions.liveStart = options.liveStart
        readerOptions.allowPrivateNetworks = options.allowPrivateNetworks
        readerOptions.warn = { InputWarnings.add($0) }
        let reader: HLSReader
        let configured = readerOptions
        do {
            reader = try waitFor(interrupt) { () async throws(HLSInputError) -> HLSReader in try await HLSReader.open(url, options: configured) }
        } catch {
            if interrupt.isStopped { throw .inputUnreadable(url, reason: "reading was stopped") }
            throw HLSInput.error(for: .failed(error), url: url, before: true)
        }
        reader.start()
        // A stop while the first segments are read ends the reader's feed, so the probe returns.
        interrupt.onStop { reader.stop() }
        return try HLSInput(reader: reader, maxPixels: options.maxPixels, interrupt: interrupt.state)
    }
}

/// Runs async work to completion from a thread that may block (the demuxer opens off the
/// cooperative pool: `offThePool`). A stop of `interrupt` cancels the work's task, so the wait ends
/// as soon as the work honours cancellation (its network requests and retry delays do).
func waitFor<T: Sendable, E: Error>(_ interrupt: InputInterrupt, _ operation: @escaping @Sendable () async throws(E) -> T) throws(E) -> T {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var result: Result<T, E>!
    let task = Task {
        do throws(E) { result = .success(try await operation()) } catch { result = .failure(error) }
        done.signal()
    }
    interrupt.onStop { task.cancel() }
    done.wait()
    return try result.get()
}

/// Warnings of inputs read by livefilter's own code (the HLS reader), drained with FFmpeg's
/// captured network warnings (`FFmpegLog.drainCapturedWarnings`).
/// At most `capacity` lines wait: a program that never drains them (a library user), under a caller
/// refused after another, keeps the newest, not every line since the start.
enum InputWarnings {
    static let capacity = 256
    private static let lines = Mutex<[String]>([])
    static func add(_ line: String) {
        lines.withLock { lines in
            if lines.count >= capacity { lines.removeFirst(lines.count - capacity + 1) }
            lines.append(line)
        }
    }
    static func drain() -> [String] {
        lines.withLock { lines in
            defer { lines = [] }
            return lines
        }
    }
}

import Synchronization
