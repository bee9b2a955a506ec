import CFFmpegLog
import Synchronization

/// The warnings of one input (of the run that owns it): what livefilter's own input code says (the
/// HLS reader's retries, a refused publisher, a reconnection) and the network and playlist lines
/// FFmpeg logs while this input's calls run. Two runs in one process keep theirs apart.
///
/// FFmpeg's log callback is process-wide: a line is this input's when FFmpeg logs it on a thread
/// while that thread runs this input's call (`routingFFmpegLines`: the open, the probe, each read),
/// which is where tcp, tls, http and the RTMP server log. A line FFmpeg logs from a thread of its
/// own, or from a call no input made, is nobody's: `FFmpegLog.drainCapturedWarnings()` has those.
///
/// At most `capacity` of livefilter's own lines wait (and FFmpeg's ring keeps its newest 64): a
/// program that never drains them (a library user), under a caller refused after another, keeps
/// the newest, not every line since the start.
public final class InputWarningLog: Sendable {
    static let capacity = 256
    private let lines = Mutex<[String]>([])
    /// FFmpeg's lines for this input, captured in C (`lf_log_route`); freed with this.
    nonisolated(unsafe) let sink: OpaquePointer?

    /// Yields (at most one waiting) whenever a line arrives, of either kind: `for await _ in
    /// log.arrivals { log.drain() }` reports them as they come, without polling. One reader.
    public let arrivals: AsyncStream<Void>
    private let arrived: AsyncStream<Void>.Continuation

    public init() {
        sink = lf_log_sink_new()
        (arrivals, arrived) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        if let sink {
            // Unretained: only a thread inside `routingFFmpegLines` (which holds this log) adds to the sink.
            lf_log_sink_set_notify(sink, { context in
                Unmanaged<InputWarningLog>.fromOpaque(context!).takeUnretainedValue().arrived.yield()
            }, Unmanaged.passUnretained(self).toOpaque())
        }
    }

    deinit {
        if let sink { lf_log_sink_set_notify(sink, nil, nil) }
        arrived.finish()
        lf_log_sink_free(sink)
    }

    /// Adds one of livefilter's own lines.
    func add(_ line: String) {
        lines.withLock { lines in
            if lines.count >= Self.capacity { lines.removeFirst(lines.count - Self.capacity + 1) }
            lines.append(line)
        }
        arrived.yield()
    }

    /// The warnings since the last call: FFmpeg's lines, then livefilter's own, oldest first.
    public func drain() -> [String] {
        var captured: [String] = []
        if let sink {
            var buffer = [CChar](repeating: 0, count: 320)
            while lf_log_sink_next(sink, &buffer, Int32(buffer.count)) != 0 { captured.append(String(cString: buffer)) }
        }
        return captured + lines.withLock { lines in
            defer { lines = [] }
            return lines
        }
    }

    /// Runs `body` with the lines FFmpeg logs on this thread meanwhile going to this input.
    func routingFFmpegLines<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        let previous = lf_log_route(sink)
        defer { lf_log_route(previous) }
        return try body()
    }
}
