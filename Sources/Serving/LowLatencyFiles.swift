import Foundation
import HLS
import Hummingbird
import NIOCore
import Synchronization

// The serving half of Low-Latency HLS (rfc8216bis §6.2.5, §6.2.6): blocking playlist reload, Playlist
// Delta Updates and preload-hinted parts, for a folder a writer publishes by rename. A held request
// waits on the `PublicationBoard` (a suspended task, no thread), woken by the rename of the file it
// waits for, and gives up after three Target Durations, or at once when its client goes.
//
// Cache-Control follows rfc8216bis Appendix B.1 (the Low-Latency server configuration, which Apple's
// "Enabling Low-Latency HLS" asks CDNs and origins to honour): successful responses to blocking
// playlist requests cached six Target Durations, unsuccessful ones four; successful responses to
// non-blocking requests of a low-latency playlist half a Target Duration; successful responses to
// blocking media requests (a hinted part) six Target Durations, unsuccessful ones one.

extension StaticFiles {
    enum LowLatencyPlaylist {
        /// The request is answered (held and served, a delta update, or refused).
        case answer(Response)
        /// A low-latency playlist asked for without directives: the file as it is, with this Cache-Control.
        case file(cacheControl: String)
        /// Not a live low-latency playlist (no CAN-BLOCK-RELOAD=YES, or EXT-X-ENDLIST, or not a media
        /// playlist): served as any playlist, its directives ignored (§6.2.5).
        case notLowLatency
    }

    /// A media playlist request (`file` ends in .m3u8) with its Delivery Directives honoured.
    func lowLatencyPlaylist(_ file: String, request: Request, headers: HTTPFields) async throws -> LowLatencyPlaylist {
        guard let board, let first = playlists.current(file), let playlist = first.media,
              playlist.serverControl?.canBlockReload == true, !playlist.endList else { return .notLowLatency }
        let target = Double(max(1, playlist.targetDuration))
        let query = request.uri.query
        guard let query, query.contains(DeliveryDirectives.reservedPrefix) else {
            // B.1: a non-blocking request of a live low-latency playlist, half a Target Duration.
            return .file(cacheControl: Self.maxAge(target / 2))
        }
        var refused = headers
        // B.1: an unsuccessful response to a blocking playlist request, four Target Durations.
        refused[.cacheControl] = Self.maxAge(4 * target)
        let honoured: DeliveryDirectives
        do {
            honoured = try DeliveryDirectives(query: query).check(against: playlist)
        } catch {
            // §6.2.5.2: a malformed directive, _HLS_part without _HLS_msn, or a request too far ahead.
            return .answer(Self.text(.badRequest, "\(error)\n", refused))
        }
        var snapshot = first
        if honoured.mediaSequenceNumber != nil {
            // §6.2.5.2: hold until the playlist has the segment or part, at most three Target Durations
            // (then 503). Each publication of the playlist wakes the request to look again.
            let deadline = ContinuousClock.now + .seconds(3 * target)
            let path = PublicationBoard.canonical(file)
            while true {
                let ticket = board.ticket(for: path)
                guard let current = playlists.current(file), let media = current.media else {
                    board.cancel(ticket)
                    return .answer(Self.text(.notFound, "the playlist is gone\n", refused))
                }
                if honoured.isSatisfied(by: media) {
                    board.cancel(ticket)
                    snapshot = current
                    break
                }
                guard await hold(ticket, on: board, until: deadline) else {
                    return .answer(Self.text(.serviceUnavailable,
                                             "the playlist did not reach the requested segment or part within three target durations\n",
                                             refused))
                }
            }
        }
        var headers = headers
        headers[.contentType] = Self.mimeType(for: file)
        // B.1: six Target Durations for a blocking response (its URL names a version of the playlist that
        // never changes); half a Target Duration for a delta update asked without blocking.
        headers[.cacheControl] = Self.maxAge(honoured.mediaSequenceNumber != nil ? 6 * target : target / 2)
        let body: ByteBuffer
        if let skip = honoured.skip, let delta = snapshot.delta(skip) {
            body = delta
        } else {
            body = snapshot.bytes
            headers[.eTag] = snapshot.info.etag
            headers[.lastModified] = snapshot.info.lastModified
        }
        headers[.contentLength] = String(body.readableBytes)
        return .answer(Response(status: .ok, headers: headers,
                                body: request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: body)))
    }

    /// A missing `file` that is the EXT-X-PRELOAD-HINT of a live playlist in its folder: held until it
    /// is published, then served whole or in ranges (§6.2.6); nil for any other missing file (404 at once).
    ///
    /// Given up after three Target Durations: 503 when the playlist still hints it (the writer is late,
    /// the resource may yet come: a client asks again), 404 when it no longer does (it never will:
    /// the writer moved on or stopped).
    func hintedResource(_ file: String, request: Request, context: some RequestContext, headers: HTTPFields) async throws -> Response? {
        guard let board, let target = hintingPlaylist(of: file)?.targetDuration else { return nil }
        let seconds = Double(max(1, target))
        let deadline = ContinuousClock.now + .seconds(3 * seconds)
        let path = PublicationBoard.canonical(file)
        while true {
            let ticket = board.ticket(for: path)
            if let info = FileInfo(path: file) {
                board.cancel(ticket)
                // B.1: a successful response to a blocking media request, six Target Durations.
                return try await serve(file, info: info, cacheControl: Self.maxAge(6 * seconds), request: request, context: context,
                                       headers: headers)
            }
            if await hold(ticket, on: board, until: deadline) { continue }
            if let info = FileInfo(path: file) {
                return try await serve(file, info: info, cacheControl: Self.maxAge(6 * seconds), request: request, context: context,
                                       headers: headers)
            }
            var refused = headers
            // B.1: an unsuccessful response to a blocking media request, one Target Duration.
            refused[.cacheControl] = Self.maxAge(seconds)
            if hintingPlaylist(of: file) != nil {
                return Self.text(.serviceUnavailable, "the hinted resource was not published within three target durations\n", refused)
            }
            return Self.text(.notFound, "not found: no longer hinted and never published\n", refused)
        }
    }

    /// Waits on `ticket` as `PublicationBoard.wait` does, and ends the wait (false) when the
    /// request's connection ends: a client gone is not held for until the deadline.
    func hold(_ ticket: PublicationBoard.Ticket, on board: PublicationBoard, until deadline: ContinuousClock.Instant) async -> Bool {
        let end = ServedConnection.current?.end
        let registration = end?.onClose { board.cancel(ticket) }
        defer { if let registration { end?.remove(registration) } }
        return await board.wait(ticket, until: deadline)
    }

    /// The live playlist in `file`'s folder whose EXT-X-PRELOAD-HINT names `file`.
    func hintingPlaylist(of file: String) -> MediaPlaylist? {
        let folder = (file as NSString).deletingLastPathComponent
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        for name in names where name.hasSuffix(".m3u8") && !name.hasPrefix(".") {
            guard let playlist = playlists.current(folder + "/" + name)?.media, !playlist.endList else { continue }
            for hint in playlist.preloadHints where resolve(hint: hint.uri, in: folder) == file { return playlist }
        }
        return nil
    }

    /// A hint's URI as a path under the root: relative to the playlist's folder, or to the root when it
    /// starts with `/`; nil for an absolute URL or one that leaves the root.
    func resolve(hint uri: String, in folder: String) -> String? {
        guard !uri.contains("://"), !uri.contains("?"), !uri.contains("#") else { return nil }
        let relative = uri.hasPrefix("/") ? uri : String(folder.dropFirst(root.path.count)) + "/" + uri
        guard let decoded = relative.removingPercentEncoding else { return nil }
        return resolve(decoded)
    }

    /// `max-age` in whole seconds, rounded down (a cache never keeps a response longer than the rule).
    static func maxAge(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.down))
        return whole > 0 ? "max-age=\(whole)" : "no-cache"
    }
}

/// The playlists as last read, each parsed once per version on disk (same inode, size and
/// modification time): a hundred held requests woken by one publication share one read and one
/// parse, and a delta update is rendered once per version.
final class PlaylistSnapshots: Sendable {
    final class Snapshot: Sendable {
        let info: FileInfo
        let bytes: ByteBuffer
        /// Nil for a master playlist or a text that does not parse.
        let media: MediaPlaylist?
        private let deltas = Mutex<[DeliveryDirectives.Skip: ByteBuffer]>([:])

        init(info: FileInfo, bytes: ByteBuffer, media: MediaPlaylist?) {
            (self.info, self.bytes, self.media) = (info, bytes, media)
        }

        /// The Playlist Delta Update of this version (`MediaPlaylist.deltaUpdate`), rendered once.
        func delta(_ skip: DeliveryDirectives.Skip) -> ByteBuffer? {
            guard let media else { return nil }
            if let done = deltas.withLock({ $0[skip] }) { return done }
            let text = ByteBuffer(string: media.deltaUpdate(skipping: skip).render(durations: .exact))
            deltas.withLock { $0[skip] = text }
            return text
        }
    }

    private let cache = Mutex<[String: Snapshot]>([:])

    /// The playlist at `path` as it is now; nil when there is no such file. A small file read on the
    /// calling task, as the static files' stat is.
    func current(_ path: String) -> Snapshot? {
        guard let info = FileInfo(path: path) else {
            cache.withLock { _ = $0.removeValue(forKey: path) }
            return nil
        }
        if let cached = cache.withLock({ $0[path] }), cached.info.etag == info.etag { return cached }
        // Read, then check the file is still the version stat'ed: a rename in between gives a new etag.
        guard let data = FileManager.default.contents(atPath: path), let after = FileInfo(path: path), after.etag == info.etag,
              data.count == info.size else { return current(path) }
        let media: MediaPlaylist?
        if case let .media(playlist)? = try? PlaylistParser.parse(String(decoding: data, as: UTF8.self)) {
            media = playlist
        } else {
            media = nil
        }
        let snapshot = Snapshot(info: info, bytes: ByteBuffer(bytes: data), media: media)
        cache.withLock { $0[path] = snapshot }
        return snapshot
    }
}
