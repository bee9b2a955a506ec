import CCurl
import Foundation
import HLS
import NIOCore
import Synchronization

/// Why a resource could not be read. `isPermanent` failures are not retried.
public struct FetchError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case notFound
        /// Another HTTP status than 2xx (and not 404).
        case status(Int)
        /// No progress for the allowed time (headers, or bytes of the body).
        case timedOut(seconds: Double)
        case tooLarge(limit: Int)
        /// The connection failed or closed early.
        case transport(String)
        /// A reference the input may not follow (scheme, local file from a network playlist).
        case refused(String)
    }
    public var kind: Kind
    public var url: String

    public var isPermanent: Bool {
        switch kind {
        case .refused, .tooLarge: true
        case let .status(code): code == 400 || code == 401 || code == 403 || code == 410
        default: false
        }
    }

    public var description: String {
        let url = url.forMessages
        return switch kind {
        case .notFound: "\(url): not found (404)"
        case let .status(code): "\(url): HTTP status \(code)"
        case let .timedOut(seconds): "\(url): no data for \(HLSNumber.shortest(seconds)) s (--io-timeout)"
        case let .tooLarge(limit): "\(url): larger than \(limit) bytes"
        case let .transport(why): "\(url): \(why)"
        case let .refused(why): "\(url): \(why)"
        }
    }
}

extension String {
    /// A URL as a message shows it: a hostile playlist's `data:` URI can be megabytes, so past 160
    /// characters the middle is left out.
    /// Secrets in it (an SRT passphrase, a token, a password) are hidden (`redactingSecrets`).
    public var forMessages: String {
        let text = redactingSecrets
        guard text.count > 160 else { return text }
        return "\(text.prefix(100))…(\(text.count - 140) characters)…\(text.suffix(40))"
    }
}

/// Reads playlists, keys and media over HTTP(S) (libcurl: keep-alive connections, HTTP/2 where the
/// server offers it, streamed bodies; `CurlEngine`) or from local files, with the input's limits: an
/// idle timeout (`--io-timeout`), a redirect limit, and which references a playlist may make.
public final class ResourceFetcher: Sendable {
    private let engine = CurlEngine()
    public let ioTimeout: Duration
    /// Where references may lead (local files, private addresses): checked on every URL and redirect.
    public let access: NetworkAccess
    private let maxRedirects: Int
    /// Hosts already checked against `access.privateNetworks`: whether each may be reached.
    private let checkedHosts = Mutex<[String: Bool]>([:])

    public init(ioTimeout: Duration, maxRedirects: Int, access: NetworkAccess) {
        self.ioTimeout = ioTimeout
        self.access = access
        self.maxRedirects = max(0, maxRedirects)
    }

    deinit {
        // Nothing is in flight by now; the engine's thread closes the connections and ends.
        engine.shutdown()
    }

    /// Whether `url` may be read: http(s) to a host `access` allows; a local file only for a local
    /// playlist; nothing else (`data:`, `ftp:`, …).
    public func check(_ url: URL) async throws(FetchError) {
        switch url.scheme?.lowercased() {
        case "http", "https":
            guard !access.privateNetworks else { return }
            let host = url.host ?? ""
            if let allowed = checkedHosts.withLock({ $0[host] }) {
                if allowed { return }
                throw Self.privateRefusal(url, address: nil)
            }
            let addresses = await HostAddresses.resolve(host)
            // A host that does not resolve fails as the request would; one that does must be public all through.
            let inside = addresses.first { !$0.isPublic }
            checkedHosts.withLock { if $0.count < 1024 { $0[host] = inside == nil } }
            if let inside { throw Self.privateRefusal(url, address: inside) }
        case "file", nil:
            if !access.localFiles {
                throw FetchError(kind: .refused("a playlist read over the network may not reference local files"), url: url.absoluteString)
            }
        default:
            throw FetchError(kind: .refused("the scheme '\(url.scheme ?? "")' is not supported (http, https or a local file)"), url: url.absoluteString)
        }
    }

    private static func privateRefusal(_ url: URL, address: IPAddress?) -> FetchError {
        let at = address.map { " (\($0))" } ?? ""
        return FetchError(kind: .refused("its host\(at) is a loopback, link-local or private address, which a playlist from a public "
                                         + "origin may not reach (--allow-private-networks for a trusted origin)"), url: url.absoluteString)
    }

    /// A whole small resource (a playlist, a key, an initialization section) and the URL it came
    /// from after redirects (relative references resolve against that one).
    /// - Parameter headTimeout: how long the server may hold the request before answering (a
    ///   blocking playlist reload); the body then has the idle timeout.
    public func data(_ url: URL, range: ByteRange? = nil, maxBytes: Int, headTimeout: Duration? = nil,
                     checked: Bool = true) async throws(FetchError) -> (bytes: [UInt8], url: URL) {
        let bytes = Mutex<[UInt8]>([])
        let name = url.absoluteString
        let final = try await stream(url, range: range, headTimeout: headTimeout, checked: checked) { chunk in
            try bytes.withLock { (bytes: inout [UInt8]) throws(FetchError) in
                if bytes.count + chunk.readableBytes > maxBytes { throw FetchError(kind: .tooLarge(limit: maxBytes), url: name) }
                bytes.append(contentsOf: chunk.readableBytesView)
            }
        }
        return (bytes.withLock { $0 }, final)
    }

    /// Streams a resource's body to `deliver` as it arrives; returns the URL after redirects.
    /// - Parameter deadline: the whole body must have arrived by then (a trickling server is an error).
    @discardableResult
    /// - Parameter checked: false only for the input the operator named (its references are checked).
    public func stream(_ url: URL, range: ByteRange? = nil, headTimeout: Duration? = nil, deadline: ContinuousClock.Instant? = nil,
                       checked: Bool = true, deliver: @escaping @Sendable (ByteBuffer) async throws -> Void) async throws(FetchError) -> URL {
        if checked { try await check(url) }
        if url.isFileURL || url.scheme == nil { return try await readFile(url, range: range, deliver: deliver) }
        var name = url.absoluteString
        var current = url
        var visited: Set<String> = [url.absoluteString]
        while true {
            var request = CurlRequest(url: current.absoluteString, connectTimeout: ioTimeout,
                                      firstTimeout: headTimeout.map { $0 + ioTimeout } ?? ioTimeout, idleTimeout: ioTimeout,
                                      deadline: deadline, allowsPrivateAddresses: access.privateNetworks)
            if let range, let offset = range.offset {
                // Bounded by the parser (PlaylistNumber): no overflow; an empty range asks for nothing.
                guard range.length > 0 else { return current }
                request.range = "\(offset)-\(offset + range.length - 1)"
            }
            let transfer = CurlTransfer(request)
            engine.start(transfer)
            // Whatever way this ends (done, a redirect, an error, the range complete, cancelled),
            // the transfer ends with it; after a normal end this does nothing.
            defer { engine.cancel(transfer) }
            do {
                let next = try await withTaskCancellationHandler {
                    try await receive(transfer, name: name, current: current, range: range, deliver: deliver)
                } onCancel: { [engine] in
                    engine.cancel(transfer)
                }
                guard let next else { return current }
                // A redirect is a reference like any other: the same checks, each hop.
                guard maxRedirects > 0 else { throw FetchError(kind: .transport("redirected, and --max-redirects is 0"), url: name) }
                guard visited.count <= maxRedirects else { throw FetchError(kind: .transport("too many redirects (--max-redirects)"), url: name) }
                guard visited.insert(next.absoluteString).inserted else { throw FetchError(kind: .transport("a redirect loop"), url: name) }
                guard let scheme = next.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
                    throw FetchError(kind: .refused("redirected to '\(next.absoluteString.forMessages)', which is not http(s)"), url: name)
                }
                try await check(next)
                current = next
                name = next.absoluteString
            } catch let error as FetchError {
                throw error
            } catch is CancellationError {
                throw FetchError(kind: .transport("cancelled"), url: name)
            } catch let failure as CurlFailure {
                throw Self.fetchError(failure, url: name)
            } catch {
                throw FetchError(kind: .transport("\(error)"), url: name)
            }
        }
    }

    /// One response: a redirect's target (nil: the body was delivered).
    private func receive(_ transfer: CurlTransfer, name: String, current: URL, range: ByteRange?,
                         deliver: @Sendable (ByteBuffer) async throws -> Void) async throws -> URL? {
        var events = transfer.events.makeAsyncIterator()
        guard case let .head(status, headers)? = try await events.next() else {
            throw FetchError(kind: .transport("the server sent no response"), url: name)
        }
        func header(_ key: String) -> String? { headers.first { $0.name == key }?.value }
        if [301, 302, 303, 307, 308].contains(status) {
            guard let location = header("location"), let next = URL(string: location, relativeTo: current)?.absoluteURL else {
                throw FetchError(kind: .transport("a redirect without a usable Location"), url: name)
            }
            return next
        }
        switch status {
        case 200..<300: break
        case 404: throw FetchError(kind: .notFound, url: name)
        default: throw FetchError(kind: .status(status), url: name)
        }
        if let type = header("content-type"), type.lowercased().hasPrefix("text/html") {
            throw FetchError(kind: .transport("the server sent an HTML page (\(type))"), url: name)
        }
        // A server that ignores Range sends the whole resource: cut the range out of it.
        var skip = 0, remaining: Int? = nil
        if let range, status != 206 {
            skip = range.offset ?? 0
            remaining = range.length
        }
        while case var .body(chunk)? = try await events.next() {
            engine.taken(chunk.readableBytes, of: transfer)
            if skip > 0 {
                let n = min(skip, chunk.readableBytes)
                chunk.moveReaderIndex(forwardBy: n)
                skip -= n
            }
            if let left = remaining, chunk.readableBytes > left { chunk = chunk.getSlice(at: chunk.readerIndex, length: left)! }
            if chunk.readableBytes > 0 {
                remaining = remaining.map { $0 - chunk.readableBytes }
                try await deliver(chunk)
            }
            if remaining == 0 { return nil }
        }
        if let left = remaining, left != 0 {
            throw FetchError(kind: .transport("the resource ends before the byte range does"), url: name)
        }
        return nil
    }

    private static func fetchError(_ failure: CurlFailure, url: String) -> FetchError {
        switch failure {
        case let .timedOut(seconds): return FetchError(kind: .timedOut(seconds: seconds), url: url)
        case let .refusedAddress(address): return privateRefusal(URL(string: url) ?? URL(fileURLWithPath: "/"), address: address)
        case let .failed(code, message):
            let why = switch code {
            case Int(CURLE_OPERATION_TIMEDOUT.rawValue): "the connection timed out (--io-timeout): \(message)"
            case Int(CURLE_GOT_NOTHING.rawValue), Int(CURLE_RECV_ERROR.rawValue), Int(CURLE_PARTIAL_FILE.rawValue):
                "the server closed the connection (\(message))"
            case Int(CURLE_PEER_FAILED_VERIFICATION.rawValue):
                "the server's certificate is not trusted (\(message)); a private CA's certificate can be named in SSL_CERT_FILE"
            default: message
            }
            return FetchError(kind: .transport(why), url: url)
        }
    }

    /// A local file, read by chunks on Dispatch's threads: a disk that stalls (a network mount)
    /// holds one of those, not a thread of the cooperative pool.
    private func readFile(_ url: URL, range: ByteRange?, deliver: @Sendable (ByteBuffer) async throws -> Void) async throws(FetchError) -> URL {
        let path = url.isFileURL ? url.path : url.absoluteString
        // O_NONBLOCK: opening a FIFO does not wait for a writer; only a regular file is read (a FIFO
        // or a device could hold the read for ever, where no --io-timeout reaches).
        let opened: Result<Int32, FetchError> = await Self.blocking {
            let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else {
                let code = errno
                return .failure(FetchError(kind: code == ENOENT || code == ENOTDIR ? .notFound : .transport(String(cString: strerror(code))), url: path))
            }
            var info = stat()
            guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                close(fd)
                return .failure(FetchError(kind: .refused("not a regular file (a FIFO, a device or a folder is not read)"), url: path))
            }
            return .success(fd)
        }
        let fd = try opened.get()
        defer { close(fd) }
        var offset = range?.offset ?? 0
        var remaining = range?.length ?? Int.max
        while remaining > 0 {
            let (start, wanted) = (offset, min(remaining, 256 * 1024))
            let chunk: Result<[UInt8], FetchError> = await Self.blocking {
                var bytes = [UInt8](repeating: 0, count: wanted)
                let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, wanted, off_t(start)) }
                guard n >= 0 else { return .failure(FetchError(kind: .transport(String(cString: strerror(errno))), url: path)) }
                bytes.removeLast(wanted - n)
                return .success(bytes)
            }
            let bytes = try chunk.get()
            guard !bytes.isEmpty else { break }
            (offset, remaining) = (offset + bytes.count, remaining - bytes.count)
            do { try await deliver(ByteBuffer(bytes: bytes)) } catch let error as FetchError { throw error } catch {
                throw FetchError(kind: .transport("\(error)"), url: path)
            }
        }
        if range != nil, remaining > 0 { throw FetchError(kind: .transport("the file ends before the byte range does"), url: path) }
        return url
    }

    /// `work` on one of Dispatch's threads (not the cooperative pool's), its result handed back.
    private static func blocking<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async { continuation.resume(returning: work()) }
        }
    }
}
