import CFFmpeg
import CSRT
import HLSClient
import Foundation
import Synchronization

/// An SRT listener that keeps its port for the whole input and gives the demuxer one publisher's
/// connection at a time.
///
/// Why not FFmpeg's `srt` protocol in listener mode: it accepts one caller per open and leaves its
/// listening socket open but unowned, and a publisher that vanished (killed, unplugged) is noticed
/// only after SRT's peer-idle timeout (5 s). A publisher that came back sooner waited for that:
/// measured, its pictures reached the channel 3.7 s after it started (0.4 s over RTMP, where the
/// kernel reports a dead peer at once). Here the port listens all along. A publisher that connects
/// while another is connected waits — it does not cut off a stream that is flowing — and takes over
/// as soon as the current one has gone or has sent nothing for `takeOverAfter`.
final class SRTListener {
    struct Settings: Equatable {
        var host: String?
        var port: Int
        var passphrase: String?
        var keyLength: Int32?
        /// Milliseconds (the URL gives microseconds, as FFmpeg's `srt` options do).
        var latency: Int32?
        var receiveLatency: Int32?
        var peerLatency: Int32?
        var payloadSize: Int32?
        /// Only callers that send this stream ID may publish (SRT's `streamid`, OBS's "Stream ID").
        var streamID: String?
        /// Query options the listener does not apply (named in a warning, not silently dropped).
        var ignored: [String] = []
    }

    /// A connection waiting behind the current one takes over after the current has been silent
    /// this long (a live SRT stream sends every few milliseconds).
    static let takeOverAfter: Duration = .milliseconds(500)

    let url: String
    let settings: Settings
    private let listener: SRTSOCKET
    private let poller: Int32
    private let interrupt: InputInterrupt
    private let warnings: InputWarningLog
    /// The stop's descriptor, watched with the SRT sockets: a stop wakes the wait at once.
    private var wake: Int32?
    private let ioTimeout: Duration
    /// The connection the demuxer reads, and the newest publisher waiting behind it.
    private var current: Connection?
    private var pending: Connection?
    /// The current connection ended after a silence (a publisher killed or cut off, then replaced or
    /// timed out by SRT): what the demuxer still hands out of it — the last pictures it held back
    /// until the end — is seconds old, and would look like the input coming back.
    private(set) var endedStale = false
    /// A message read but larger than the demuxer's buffer asked for.
    private var leftover: [UInt8] = []
    private var scratch = [UInt8](repeating: 0, count: 1500)

    private struct Connection {
        let socket: SRTSOCKET
        let peer: String
        var lastData: ContinuousClock.Instant
        /// It connected while the current publisher was still sending: it waits its turn.
        var behindALiveOne = false
    }

    /// Parses an `srt://HOST:PORT?mode=listener&…` URL (FFmpeg's option names and units).
    static func settings(of url: String) throws(MediaError) -> Settings {
        guard let parts = URLComponents(string: url), parts.scheme?.lowercased() == "srt", let port = parts.port, (1...65535).contains(port) else {
            throw .invalidSettings("\(url.forMessages): an SRT listener needs srt://HOST:PORT?mode=listener (a port from 1 to 65535)")
        }
        var host = parts.host.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "[]")) }
        if host == "" || host == "0.0.0.0" { host = nil }
        var s = Settings(host: host, port: port)
        func number(_ name: String, _ value: String) throws(MediaError) -> Int64 {
            guard let n = Int64(value), n >= 0 else { throw .invalidSettings("\(url.forMessages): \(name)=\(value) is not a number of 0 or more") }
            return n
        }
        for item in parts.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "mode":
                guard value == "listener" else { throw .invalidSettings("\(url.forMessages): mode=\(value) is not a listener") }
            case "passphrase":
                guard (10...79).contains(value.count) else {
                    throw .invalidSettings("\(url.forMessages): an SRT passphrase has 10 to 79 characters (this one has \(value.count))")
                }
                s.passphrase = value
            case "pbkeylen":
                guard ["16", "24", "32"].contains(value) else { throw .invalidSettings("\(url.forMessages): pbkeylen is 16, 24 or 32 (bytes), not \(value)") }
                s.keyLength = Int32(value)
            case "latency", "tsbpddelay": s.latency = Int32(clamping: try number(item.name, value) / 1000)
            case "rcvlatency": s.receiveLatency = Int32(clamping: try number(item.name, value) / 1000)
            case "peerlatency": s.peerLatency = Int32(clamping: try number(item.name, value) / 1000)
            case "payload_size", "pkt_size": s.payloadSize = Int32(clamping: try number(item.name, value))
            case "streamid": s.streamID = value
            case "timeout", "listen_timeout": break  // --io-timeout and the channel's own wait decide
            default: s.ignored.append(item.name)
            }
        }
        return s
    }

    init(url: String, ioTimeout: Duration, interrupt: InputInterrupt, warnings: InputWarningLog) throws(MediaError) {
        self.warnings = warnings
        self.url = url
        self.interrupt = interrupt
        self.ioTimeout = ioTimeout
        settings = try Self.settings(of: url)
        if !settings.ignored.isEmpty {
            warnings.add("\(url.forMessages): the SRT listener does not apply \(settings.ignored.joined(separator: ", ")) (it applies passphrase, pbkeylen, latency, rcvlatency, peerlatency, payload_size, streamid)")
        }
        srt_startup()
        SRTLog.install(url: url, warnings: warnings)
        listener = srt_create_socket()
        poller = srt_epoll_create()
        do throws(MediaError) {
            guard listener != SRT_INVALID_SOCK, poller >= 0 else { throw .inputUnreadable(url, reason: "cannot create an SRT socket: \(Self.lastError)") }
            try configure()
            try bind()
            guard srt_listen(listener, 4) == 0 else { throw .inputUnreadable(url, reason: "cannot listen there: \(Self.lastError)") }
            if settings.streamID != nil {
                srt_listen_callback(listener, { opaque, _, _, peer, streamID in
                    let this = Unmanaged<SRTListener>.fromOpaque(opaque!).takeUnretainedValue()
                    return this.admits(streamID.map { String(cString: $0) }, from: peer) ? 0 : -1
                }, Unmanaged.passUnretained(self).toOpaque())
            }
            var events = Int32(SRT_EPOLL_IN.rawValue | SRT_EPOLL_ERR.rawValue)
            srt_epoll_add_usock(poller, listener, &events)
            if let fd = interrupt.wakeDescriptor() {
                var readable = Int32(SRT_EPOLL_IN.rawValue)
                if srt_epoll_add_ssock(poller, fd, &readable) == 0 { wake = fd }
            }
        } catch {
            if listener != SRT_INVALID_SOCK { srt_close(listener) }
            if poller >= 0 { srt_epoll_release(poller) }
            srt_cleanup()
            throw error
        }
    }

    deinit {
        for connection in [current, pending].compactMap({ $0 }) { srt_close(connection.socket) }
        srt_close(listener)
        srt_epoll_release(poller)
        SRTLog.uninstall(url: url)
        srt_cleanup()
    }

    private static var lastError: String { String(cString: srt_getlasterror_str()) }

    private func set<T>(_ option: SRT_SOCKOPT, _ value: T) throws(MediaError) {
        var v = value
        let ok = withUnsafeBytes(of: &v) { srt_setsockflag(listener, option, $0.baseAddress, Int32($0.count)) == 0 }
        if !ok { throw .invalidSettings("\(url.forMessages): SRT refused an option (\(option)): \(Self.lastError)") }
    }

    /// Options set on the listener are inherited by every connection it accepts.
    private func configure() throws(MediaError) {
        try set(SRTO_RCVSYN, false)   // accept and receive without blocking: one poller watches them all
        try set(SRTO_SNDSYN, false)
        try set(SRTO_TRANSTYPE, SRTT_LIVE)
        if let latency = settings.latency { try set(SRTO_LATENCY, latency) }
        if let latency = settings.receiveLatency { try set(SRTO_RCVLATENCY, latency) }
        if let latency = settings.peerLatency { try set(SRTO_PEERLATENCY, latency) }
        if let size = settings.payloadSize { try set(SRTO_PAYLOADSIZE, size) }
        if let length = settings.keyLength { try set(SRTO_PBKEYLEN, length) }
        if let passphrase = settings.passphrase {
            let ok = passphrase.withCString { srt_setsockflag(listener, SRTO_PASSPHRASE, $0, Int32(strlen($0))) == 0 }
            if !ok { throw .invalidSettings("\(url.forMessages): SRT refused the passphrase: \(Self.lastError)") }
        }
    }

    private func bind() throws(MediaError) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_flags = AI_PASSIVE
        var found: UnsafeMutablePointer<addrinfo>?
        let code = getaddrinfo(settings.host, String(settings.port), &hints, &found)
        guard code == 0, let first = found else {
            throw .inputUnreadable(url, reason: "cannot listen there: \(String(cString: gai_strerror(code)))")
        }
        defer { freeaddrinfo(first) }
        guard srt_bind(listener, first.pointee.ai_addr, Int32(first.pointee.ai_addrlen)) == 0 else {
            throw .inputUnreadable(url, reason: "cannot listen there: \(Self.lastError)")
        }
    }

    /// The stream ID check, run by SRT before it answers a caller's handshake.
    private func admits(_ streamID: String?, from peer: UnsafePointer<sockaddr>?) -> Bool {
        if streamID == settings.streamID { return true }
        SRTLog.refusedHere()
        warnings.add("a publisher on \(url.forMessages) from \(Self.describe(peer)) was refused: its stream ID \(streamID.map { "'\($0)'" } ?? "(none)") is not the URL's; waiting for the next")
        return false
    }

    private static func describe(_ address: UnsafePointer<sockaddr>?) -> String {
        guard let address else { return "an unknown address" }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST)), service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let length = socklen_t(address.pointee.sa_family == sa_family_t(AF_INET6) ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        guard getnameinfo(address, length, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV) == 0 else {
            return "an unknown address"
        }
        return "\(String(cString: host)):\(String(cString: service))"
    }

    /// The flag FFmpeg's callback reads too (a plain load: this is on every message's path).
    private var stopped: Bool { interrupt.state.pointee.stop != 0 }

    /// Waits for SRT events (at most `milliseconds`; -1: until one comes, or the stop), accepting
    /// publishers that connected and dropping a waiting one that left. Returns whether the current
    /// connection has data or an error.
    ///
    /// `srt_epoll_wait`, not `srt_epoll_uwait`: only it watches a system descriptor (the stop's)
    /// beside the SRT sockets. It reports a socket's error as readable: a waiting publisher is
    /// watched for errors only, so its socket among the readable ones is one that left.
    private func poll(milliseconds: Int64) -> Bool {
        var ready = [SRTSOCKET](repeating: SRT_INVALID_SOCK, count: 4)
        var readyCount = Int32(ready.count)
        var system: [SYSSOCKET] = [-1]
        var systemCount = Int32(system.count)
        let count = srt_epoll_wait(poller, &ready, &readyCount, nil, nil, milliseconds, &system, &systemCount, nil, nil)
        if count < 0, milliseconds < 0, srt_getlasterror(nil) != SRT_ETIMEOUT.rawValue {
            // A wait that fails at once must not spin: try again in 100 ms, or at the stop.
            _ = interrupt.sleep(until: .now.advanced(by: .milliseconds(100)))
        }
        var currentReady = false
        for socket in ready.prefix(count > 0 ? Int(min(readyCount, Int32(ready.count))) : 0) {
            if socket == listener {
                acceptWaiting()
            } else if socket == current?.socket {
                currentReady = true
            } else if let waiting = pending, socket == waiting.socket {
                warnings.add("a publisher on \(url.forMessages) from \(waiting.peer) left before its turn")
                drop(waiting)
                pending = nil
            }
        }
        return currentReady
    }

    private func acceptWaiting() {
        while true {
            var address = sockaddr_storage()
            var length = Int32(MemoryLayout<sockaddr_storage>.size)
            let socket = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { srt_accept(listener, $0, &length) }
            }
            guard socket != SRT_INVALID_SOCK else { return }
            let peer = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Self.describe($0) } }
            // Only audio as the errors; data is read when this connection's turn comes.
            var events = Int32(SRT_EPOLL_ERR.rawValue)
            srt_epoll_add_usock(poller, socket, &events)
            let behind = current.map { ContinuousClock.now - $0.lastData < Self.takeOverAfter } ?? false
            if let older = pending {
                warnings.add("a publisher on \(url.forMessages) from \(older.peer) was waiting and is replaced by a newer one from \(peer)")
                drop(older)
            } else if behind {
                warnings.add("a publisher on \(url.forMessages) from \(peer) connected while another publishes: it takes over when that one stops")
            }
            pending = Connection(socket: socket, peer: peer, lastData: .now, behindALiveOne: behind)
        }
    }

    private func drop(_ connection: Connection) {
        srt_epoll_remove_usock(poller, connection.socket)
        srt_close(connection.socket)
    }

    /// Ends the current connection (it left, was refused, or a waiting one takes over).
    func closeCurrent() {
        if let current { drop(current) }
        current = nil
        leftover = []
        endedStale = false
    }

    /// The next publisher's connection: one already waiting, else the first to connect. Throws when
    /// the input is stopped.
    func nextPublisher() throws(MediaError) -> String {
        closeCurrent()
        while pending == nil {
            if stopped { throw .inputUnreadable(url, reason: "reading was stopped") }
            // Woken by a caller's handshake or by the stop; without the stop's descriptor (no
            // pipe could be made) the flag is looked at every 100 ms.
            _ = poll(milliseconds: wake == nil ? 100 : -1)
        }
        var next = pending!
        pending = nil
        // A publisher that waited its turn behind a live one has been sending all along: what SRT
        // holds of that is behind the live edge by the wait, and would stay that far behind; it
        // starts from now (its next keyframe). One that came back after the last one went silent
        // keeps what it sent, its first keyframe, however long this reader took to get to it.
        if next.behindALiveOne, ContinuousClock.now - next.lastData > .seconds(1) {
            while scratch.withUnsafeMutableBytes({ srt_recvmsg(next.socket, $0.baseAddress!.assumingMemoryBound(to: CChar.self), Int32($0.count)) }) > 0 {}
        }
        next.lastData = .now
        var events = Int32(SRT_EPOLL_IN.rawValue | SRT_EPOLL_ERR.rawValue)
        srt_epoll_update_usock(poller, next.socket, &events)
        current = next
        return next.peer
    }

    /// AVIO's read: the current connection's bytes; the end of file when it has gone, or when a
    /// waiting publisher takes over from a silent one.
    func read(_ buffer: UnsafeMutablePointer<UInt8>, _ size: Int32) -> Int32 {
        guard size > 0 else { return 0 }
        if !leftover.isEmpty { return handOut(leftover[...], to: buffer, size) }
        while true {
            guard var connection = current else { return lf_averror_eof() }
            if stopped || lf_interrupt_expired(interrupt.state) != 0 { return lf_averror_exit() }
            let received = scratch.withUnsafeMutableBytes { srt_recvmsg(connection.socket, $0.baseAddress!.assumingMemoryBound(to: CChar.self), Int32($0.count)) }
            if received > 0 {
                connection.lastData = .now
                current = connection
                return handOut(scratch[0..<Int(received)], to: buffer, size)
            }
            let silent = ContinuousClock.now - connection.lastData
            if received == SRT_ERROR, srt_getlasterror(nil) != SRT_EASYNCRCV.rawValue {
                // The publisher closed the connection, or SRT gave up on it (its peer-idle timeout).
                endedStale = silent >= Self.takeOverAfter
                return lf_averror_eof()
            }
            if pending != nil, silent >= Self.takeOverAfter {
                warnings.add("\(url.forMessages): the publisher from \(connection.peer) has sent nothing for \(String(format: "%.1f", silent.seconds)) s; the one waiting from \(pending!.peer) takes over")
                endedStale = true
                return lf_averror_eof()
            }
            if silent > ioTimeout { return lf_averror(ETIMEDOUT) }
            _ = poll(milliseconds: wake == nil ? 50 : nextDeadline(silent: silent))
        }
    }

    /// Milliseconds until the nearest deadline a read has: the --io-timeout, a waiting publisher's
    /// take-over, the open's (FFmpeg's interrupt deadline). Data, a caller and the stop wake the
    /// wait before it: nothing is looked at on a timer.
    private func nextDeadline(silent: Duration) -> Int64 {
        var wait = ioTimeout - silent
        if pending != nil { wait = min(wait, Self.takeOverAfter - silent) }
        let deadline = interrupt.state.pointee.deadline
        if deadline != 0 { wait = min(wait, .microseconds(deadline - av_gettime_relative())) }
        let c = wait.components
        // Rounded up, so the deadline has passed when the wait ends; at least 1 ms (0 would not wait).
        return max(1, c.seconds * 1000 + (c.attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    private func handOut(_ bytes: ArraySlice<UInt8>, to buffer: UnsafeMutablePointer<UInt8>, _ size: Int32) -> Int32 {
        let count = min(bytes.count, Int(size))
        bytes.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress!, count: count) }
        leftover = Array(bytes.dropFirst(count))
        return Int32(count)
    }
}

private extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// SRT's own log (its threads, a C callback): a caller refused during the handshake — a wrong
/// passphrase above all — is seen only there; it becomes a warning line naming the listener.
enum SRTLog {
    /// The listeners, newest last. SRT's refusal line names no socket: with two listeners in one
    /// process it is the newest's (its URL, its run's warnings) — what cannot be routed exactly.
    private static let listening = Mutex<[(url: String, warnings: InputWarningLog)]>([])
    private static let ownRefusals = Mutex(0)

    static func refusedHere() { ownRefusals.withLock { $0 += 1 } }

    static func install(url: String, warnings: InputWarningLog) {
        listening.withLock { urls in
            urls.append((url, warnings))
            if urls.count == 1 {
                srt_setloglevel(LOG_WARNING)
                srt_setloghandler(nil) { _, level, _, _, _, message in
                    guard let message else { return }
                    let text = String(cString: message)
                    SRTLog.note(level: level, text)
                }
            }
        }
    }

    static func uninstall(url: String) {
        listening.withLock { urls in
            if let i = urls.firstIndex(where: { $0.url == url }) { urls.remove(at: i) }
        }
    }

    /// SRT's listener says, for each caller it refuses, `processConnectRequest: rsp(REJECT): 1010 -
    /// Incorrect passphrase` (1011: none given; others: a stream ID refused, a version, …).
    static func note(level: Int32, _ text: String) {
        guard let range = text.range(of: "rsp(REJECT):"), let (url, warnings) = listening.withLock({ $0.last }) else { return }
        // A caller the listener's own check refused (its stream ID) has its line already.
        if ownRefusals.withLock({ count in defer { count = max(0, count - 1) }; return count > 0 }) { return }
        let detail = text[range.upperBound...].trimmingCharacters(in: .whitespacesAndNewlines)
        let reason = detail.split(separator: "-", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? detail
        warnings.add("a publisher on \(url.forMessages) was refused by SRT: \(reason.prefix(1).lowercased() + reason.dropFirst()); waiting for the next")
    }
}
