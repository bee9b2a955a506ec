import CCurl
import Foundation
import NIOCore
import Synchronization

/// What one GET asks of the network: the URL, a byte range, and the limits the fetcher sets.
struct CurlRequest: Sendable {
    var url: String
    /// `first-last`, inclusive, when only part of the resource is wanted.
    var range: String?
    /// The connection's setup (DNS, TCP, TLS) must finish within this.
    var connectTimeout: Duration
    /// Until the response's head: the idle time, plus how long a blocking reload may be held.
    var firstTimeout: Duration
    /// Between two signs of life once the head has come.
    var idleTimeout: Duration
    /// The whole body must have arrived by then (a trickling server is an error).
    var deadline: ContinuousClock.Instant?
    /// False: a connection (new or reused) to a loopback, link-local or private address is cut
    /// before the request is sent, whatever the name resolved to when it was checked.
    var allowsPrivateAddresses: Bool
}

/// What a transfer hands its reader: the response's head once, then its body as it comes.
enum CurlEvent: Sendable {
    case head(status: Int, headers: [(name: String, value: String)])
    case body(ByteBuffer)
}

/// Why a transfer ended early, before the fetcher says it in its own words.
enum CurlFailure: Error {
    /// No sign of life within the limit (seconds), or the deadline passed.
    case timedOut(seconds: Double)
    /// The connection led to an address the input may not reach.
    case refusedAddress(IPAddress)
    /// libcurl's result and its message.
    case failed(code: Int, message: String)
}

/// One transfer: its easy handle and the stream its reader takes the events from. Its mutable
/// state is the engine thread's alone (libcurl calls back on that thread), except `buffered`.
final class CurlTransfer: @unchecked Sendable {
    let request: CurlRequest
    let events: AsyncThrowingStream<CurlEvent, any Error>
    fileprivate let continuation: AsyncThrowingStream<CurlEvent, any Error>.Continuation
    fileprivate var easy: UnsafeMutableRawPointer?
    fileprivate var headerLines: [(name: String, value: String)] = []
    fileprivate var headSent = false
    fileprivate var started = ContinuousClock.now
    fileprivate var lastProgress: ContinuousClock.Instant?
    fileprivate var refused: IPAddress?
    fileprivate let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    /// Bytes handed to the reader and not yet taken, and whether libcurl was told to pause because
    /// of them: a slow reader holds the server back instead of buffering a whole segment.
    fileprivate let buffered = Mutex<(bytes: Int, paused: Bool)>((0, false))
    /// Past this much unread body the transfer pauses; it resumes at half.
    static let bufferLimit = 1 << 20

    init(_ request: CurlRequest) {
        self.request = request
        (events, continuation) = AsyncThrowingStream.makeStream(of: CurlEvent.self, throwing: (any Error).self)
        errorBuffer.initialize(to: 0)
    }

    deinit {
        errorBuffer.deallocate()
    }

    /// The reader took `count` bytes of body: true when the transfer was paused and may go on.
    fileprivate func taken(_ count: Int) -> Bool {
        buffered.withLock { state in
            state.bytes -= count
            guard state.paused, state.bytes < Self.bufferLimit / 2 else { return false }
            state.paused = false
            return true
        }
    }
}

/// libcurl's multi interface on a thread of its own: every transfer of one fetcher, its
/// connections kept alive for the next request and shared by HTTP/2 streams (libcurl with
/// nghttp2 and OpenSSL, as Debian builds it). The thread sleeps in `curl_multi_poll` until a socket,
/// a timeout of libcurl's or ours, or a command (`curl_multi_wakeup`) needs it; nothing polls a flag.
final class CurlEngine: @unchecked Sendable {
    private enum Command { case add(CurlTransfer), cancel(CurlTransfer), resume(CurlTransfer), shutdown }

    private let multi: UnsafeMutableRawPointer
    private let commands = Mutex<[Command]>([])
    /// The engine thread's: the transfers attached to the multi handle, by easy handle.
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]

    /// `SSL_CERT_FILE` and `SSL_CERT_DIR`, read once (libcurl names its built-in bundle, which hides them from OpenSSL).
    private static let trust: (file: String?, folder: String?) = {
        let environment = ProcessInfo.processInfo.environment
        return (environment["SSL_CERT_FILE"].flatMap { $0.isEmpty ? nil : $0 }, environment["SSL_CERT_DIR"].flatMap { $0.isEmpty ? nil : $0 })
    }()
    /// libcurl honours `http_proxy`, `https_proxy` and `all_proxy` (as curl and ffmpeg do). Through a
    /// proxy the connection is the proxy's, so only the name is checked (`ResourceFetcher.check`).
    private static let proxied: Bool = {
        let environment = ProcessInfo.processInfo.environment
        // libcurl reads `http_proxy` in lower case only (a CGI's HTTP_PROXY is a request header).
        return ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"].contains { environment[$0].map { !$0.isEmpty } ?? false }
    }()
    private static let global: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    init() {
        _ = Self.global
        multi = curl_multi_init()
        // Several requests to one HTTP/2 origin share its connection (libcurl's default, said here).
        lf_curl_multi_set_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX)
        let thread = Thread { [self] in run() }
        thread.name = "livefilter-http"
        thread.start()
    }

    /// Starts `transfer`; its events arrive on `transfer.events`.
    func start(_ transfer: CurlTransfer) { send(.add(transfer)) }

    /// Ends `transfer` now if it is still running; its stream ends with `CancellationError`.
    func cancel(_ transfer: CurlTransfer) { send(.cancel(transfer)) }

    /// The reader took `count` bytes of `transfer`'s body.
    func taken(_ count: Int, of transfer: CurlTransfer) {
        if transfer.taken(count) { send(.resume(transfer)) }
    }

    /// Ends every transfer and the thread; the connections close. Returns at once.
    func shutdown() { send(.shutdown) }

    private func send(_ command: Command) {
        commands.withLock { $0.append(command) }
        curl_multi_wakeup(multi)
    }

    // MARK: The engine thread

    private func run() {
        var stopping = false
        while !stopping || !active.isEmpty {
            for command in commands.withLock({ list in defer { list.removeAll() }; return list }) {
                switch command {
                case let .add(transfer):
                    if stopping { transfer.continuation.finish(throwing: CancellationError()) } else { add(transfer) }
                case let .cancel(transfer): finish(transfer, CancellationError())
                case let .resume(transfer): if let easy = transfer.easy, active[easy] != nil { lf_curl_resume(easy) }
                case .shutdown:
                    stopping = true
                    for transfer in Array(active.values) { finish(transfer, CancellationError()) }
                }
            }
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard lf_curl_message_is_done(message) != 0, let easy = lf_curl_message_handle(message),
                      let transfer = active[easy] else { continue }
                let result = lf_curl_message_result(message)
                finish(transfer, result == CURLE_OK ? nil : failure(of: transfer, result))
            }
            let now = ContinuousClock.now
            var wake = now + .seconds(60)
            for transfer in Array(active.values) {
                guard let expiry = expiry(of: transfer) else { continue }
                if expiry <= now {
                    let limit = transfer.lastProgress == nil ? transfer.request.firstTimeout : transfer.request.idleTimeout
                    finish(transfer, CurlFailure.timedOut(seconds: limit.seconds))
                } else {
                    wake = min(wake, expiry)
                }
            }
            if stopping && active.isEmpty { break }
            var curlTimeout = -1
            curl_multi_timeout(multi, &curlTimeout)
            var milliseconds = Int(((wake - now).seconds * 1000).rounded(.up))
            if curlTimeout >= 0 { milliseconds = min(milliseconds, curlTimeout) }
            curl_multi_poll(multi, nil, 0, Int32(clamping: max(0, milliseconds)), nil)
        }
    }

    deinit {
        // After the thread's end (it holds the engine while it runs): a late wakeup still finds the handle.
        curl_multi_cleanup(multi)
    }

    /// When `transfer` fails for want of progress: the first or the idle limit, or its deadline.
    /// Never while it is paused because its reader is slow (the server is not the one idle then).
    private func expiry(of transfer: CurlTransfer) -> ContinuousClock.Instant? {
        if transfer.buffered.withLock({ $0.paused }) { return transfer.request.deadline }
        let idle = transfer.lastProgress.map { $0 + transfer.request.idleTimeout } ?? transfer.started + transfer.request.firstTimeout
        return transfer.request.deadline.map { min($0, idle) } ?? idle
    }

    private func add(_ transfer: CurlTransfer) {
        guard let easy = curl_easy_init() else {
            transfer.continuation.finish(throwing: CurlFailure.failed(code: -1, message: "libcurl could not start a transfer"))
            return
        }
        transfer.easy = easy
        let request = transfer.request
        let user = Unmanaged.passUnretained(transfer).toOpaque()
        lf_curl_set_string(easy, CURLOPT_URL, request.url)
        lf_curl_set_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        // Redirects are the fetcher's, so each hop is checked like any reference.
        lf_curl_set_long(easy, CURLOPT_FOLLOWLOCATION, 0)
        lf_curl_set_long(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        // Wait for a connection that can carry one more HTTP/2 stream rather than open another.
        lf_curl_set_long(easy, CURLOPT_PIPEWAIT, 1)
        lf_curl_set_long(easy, CURLOPT_NOSIGNAL, 1)
        lf_curl_set_long(easy, CURLOPT_CONNECTTIMEOUT_MS, max(1, Int(request.connectTimeout.seconds * 1000)))
        lf_curl_set_string(easy, CURLOPT_USERAGENT, "livefilter")
        if let range = request.range { lf_curl_set_string(easy, CURLOPT_RANGE, range) }
        // Trust anchors beside the system's store, by OpenSSL's convention (as the curl tool and
        // Python read them): an origin signed by a private CA.
        if let file = Self.trust.file { lf_curl_set_string(easy, CURLOPT_CAINFO, file) }
        if let folder = Self.trust.folder { lf_curl_set_string(easy, CURLOPT_CAPATH, folder) }
        lf_curl_set_pointer(easy, CURLOPT_ERRORBUFFER, transfer.errorBuffer)
        lf_curl_set_data_callback(easy, CURLOPT_HEADERFUNCTION, curlHeader)
        lf_curl_set_pointer(easy, CURLOPT_HEADERDATA, user)
        lf_curl_set_data_callback(easy, CURLOPT_WRITEFUNCTION, curlBody)
        lf_curl_set_pointer(easy, CURLOPT_WRITEDATA, user)
        if !request.allowsPrivateAddresses, !Self.proxied {
            lf_curl_set_prereq_callback(easy, curlPrerequest)
            lf_curl_set_pointer(easy, CURLOPT_PREREQDATA, user)
        }
        transfer.started = .now
        active[easy] = transfer
        if curl_multi_add_handle(multi, easy) != CURLM_OK {
            active[easy] = nil
            curl_easy_cleanup(easy)
            transfer.easy = nil
            transfer.continuation.finish(throwing: CurlFailure.failed(code: -1, message: "libcurl refused the transfer"))
        }
    }

    /// Detaches `transfer` (no callback comes after this) and ends its stream.
    private func finish(_ transfer: CurlTransfer, _ error: (any Error)?) {
        guard let easy = transfer.easy, active.removeValue(forKey: easy) != nil else { return }
        curl_multi_remove_handle(multi, easy)
        curl_easy_cleanup(easy)
        transfer.easy = nil
        if let error {
            transfer.continuation.finish(throwing: error)
        } else if !transfer.headSent {
            transfer.continuation.finish(throwing: CurlFailure.failed(code: -1, message: "the server sent no response"))
        } else {
            transfer.continuation.finish()
        }
    }

    private func failure(of transfer: CurlTransfer, _ code: CURLcode) -> CurlFailure {
        if code == CURLE_ABORTED_BY_CALLBACK, let address = transfer.refused { return .refusedAddress(address) }
        let detail = String(cString: transfer.errorBuffer)
        return .failed(code: Int(code.rawValue), message: detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)
    }
}

// MARK: libcurl's callbacks (on the engine thread)

private func curlTransfer(_ user: UnsafeMutableRawPointer?) -> CurlTransfer {
    Unmanaged<CurlTransfer>.fromOpaque(user!).takeUnretainedValue()
}

/// One header line; the blank line after a final (not 1xx) status sends the head.
private let curlHeader: lf_curl_data_callback = { data, size, count, user in
    let transfer = curlTransfer(user)
    let length = size * count
    transfer.lastProgress = .now
    guard !transfer.headSent, let data else { return length }
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
        .trimmingCharacters(in: .whitespacesAndNewlines)
    if line.isEmpty {
        let status = transfer.easy.map { lf_curl_response_code($0) } ?? 0
        if status >= 200 {
            transfer.headSent = true
            transfer.continuation.yield(.head(status: status, headers: transfer.headerLines))
        }
        transfer.headerLines = []
    } else if let colon = line.firstIndex(of: ":") {
        // At most 200 header lines are kept: enough for any real answer, bounded for a hostile one.
        if transfer.headerLines.count < 200 {
            transfer.headerLines.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
    }
    return length
}

/// A piece of the body, handed on unless the reader is a megabyte behind (then: pause).
private let curlBody: lf_curl_data_callback = { data, size, count, user in
    let transfer = curlTransfer(user)
    let length = size * count
    transfer.lastProgress = .now
    guard let data, length > 0 else { return length }
    let pause = transfer.buffered.withLock { state in
        if state.bytes >= CurlTransfer.bufferLimit {
            state.paused = true
            return true
        }
        state.bytes += length
        return false
    }
    if pause { return lf_curl_write_pause() }
    transfer.continuation.yield(.body(ByteBuffer(bytes: UnsafeRawBufferPointer(start: data, count: length))))
    return length
}

/// Before each request on a connection, new or reused: the address it is connected to must be
/// one the input may reach (a name that resolved to a public address when checked and to a
/// private one now is cut here).
private let curlPrerequest: lf_curl_prereq_callback = { user, primary, _, _, _ in
    let transfer = curlTransfer(user)
    guard let primary, let address = IPAddress(String(cString: primary)), !address.isPublic else { return 0 }
    transfer.refused = address
    return lf_curl_prereq_abort()
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
