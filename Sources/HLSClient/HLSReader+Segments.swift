import Foundation
import HLS
import NIOCore
import Synchronization

/// Where the downloader is, between playlists.
struct DeliveryState {
    /// The Discontinuity Sequence Number of the last segment delivered.
    var timeline: Int?
    /// The next segment starts a new timeline whatever its number says (a restarted origin).
    var forceNewTimeline = false
    /// The next segment needs a fresh demuxer (after a cut).
    var restart = false
    /// A segment being delivered part by part: its number and the next part's index.
    var open: OpenSegment?
    var consecutiveFailures = 0
    var keys: [String: [UInt8]] = [:]
    var maps: [String: InitializationBytes] = [:]
    var hint: HintFetch?
}

/// A preload-hinted part requested before it is listed: its bytes, once the server has them.
struct HintFetch {
    var url: URL
    var offset: Int?
    var task: Task<[UInt8]?, Never>
}

/// Why delivery stopped: the reader was stopped (the feed is closed).
struct Stopped: Error {}

extension HLSReader {
    /// Fetches segments (or parts) in order into the feed until the playlist ends or the reader stops.
    func download(startingAt seconds: Double) async {
        var (version, playlist) = latest.current
        var state = DeliveryState()
        // A hinted part asked ahead is a task of its own: it ends with the download, not up to three
        // target durations later.
        defer { state.hint?.task.cancel() }
        if joinsAtNextLoad() {
            await latest.waitForNewer(than: version)
            (version, playlist) = latest.current
        }
        var msn = startSequenceNumber(playlist, at: seconds)
        do {
            while true {
                if Task.isCancelled || feed.isCancelled { throw Stopped() }
                (version, playlist) = latest.current
                let first = playlist.mediaSequenceNumber(ofSegmentAt: 0)
                let next = playlist.nextMediaSequenceNumber
                if msn > next {
                    // The media sequence went back: the origin restarted. Follow it from its edge.
                    options.warn("the media sequence of \(info.playlistURL.absoluteString) went back from \(msn) to \(next - 1): the origin restarted; following it")
                    statistics.restarted()
                    try await abandonOpenSegment(&state)
                    msn = edge(of: playlist)
                    state.forceNewTimeline = true
                    state.restart = true
                    continue
                }
                if msn < first {
                    try await abandonOpenSegment(&state)
                    state.restart = true
                    statistics.restarted()
                    if first - msn > 2 * max(playlist.segments.count, 3) {
                        // Further than a window's worth: not a reader left behind, an origin that
                        // restarted higher (or jumped). A new stream: its edge, its own timeline.
                        options.warn("the media sequence of \(info.playlistURL.absoluteString) jumped from \(msn) to \(first): the origin restarted; following it")
                        msn = edge(of: playlist)
                        state.forceNewTimeline = true
                    } else {
                        options.warn("\(first - msn) segment(s) of \(info.playlistURL.absoluteString) left the playlist before they could be read (from \(msn))")
                        msn = first
                    }
                    continue
                }
                if msn < next {
                    let index = msn - first
                    let segment = playlist.segments[index]
                    if let open = state.open, open.sequenceNumber == msn {
                        try await deliverRemainingParts(of: segment, index: index, in: playlist, from: open.nextPart, state: &state)
                    } else {
                        try await deliverSegment(segment, index: index, in: playlist, state: &state)
                    }
                    msn += 1
                    continue
                }
                // msn == next: the segment being published. With parts, read them as they come.
                if let inProgress = playlist.segmentInProgress, !inProgress.parts.isEmpty {
                    try await deliverParts(of: inProgress, sequenceNumber: msn, in: playlist, state: &state)
                } else if state.open != nil || state.timeline != nil {
                    startHintedPart(in: playlist, state: &state)
                }
                if playlist.endList {
                    feed.finish(.endOfStream)
                    return
                }
                await latest.waitForNewer(than: version)
            }
        } catch is Stopped {
            feed.finish(.cancelled)
        } catch let error as HLSInputError {
            feed.finish(.failed(error))
        } catch {
            feed.finish(.cancelled)
        }
    }

    /// Where reading starts: a live stream's edge (`--live-start`) or oldest segment; in a VOD
    /// stream, the segment holding `seconds`.
    func startSequenceNumber(_ playlist: MediaPlaylist, at seconds: Double) -> Int {
        let first = playlist.mediaSequenceNumber(ofSegmentAt: 0)
        if info.isLive { return options.liveStart == .oldest ? first : edge(of: playlist) }
        var elapsed = 0.0
        for (i, segment) in playlist.segments.enumerated() {
            if elapsed + segment.duration > seconds { return first + i }
            elapsed += segment.duration
        }
        return first + max(0, playlist.segments.count - 1)
    }

    /// Where a live stream is joined or followed after a restart: its newest complete segment, or
    /// three from the end (`--live-start holdback`, and `oldest` once the start is behind).
    func edge(of playlist: MediaPlaylist) -> Int {
        max(playlist.mediaSequenceNumber(ofSegmentAt: 0), playlist.nextMediaSequenceNumber - options.liveStart.segmentsBehindNewest)
    }

    private func abandonOpenSegment(_ state: inout DeliveryState) async throws {
        guard state.open != nil else { return }
        state.open = nil
        try await push(.segmentEnd(complete: false))
        state.restart = true
    }

    func push(_ item: ByteFeed.Item) async throws {
        do { try await feed.push(item) } catch { throw Stopped() }
    }

    // MARK: whole segments

    private func deliverSegment(_ segment: MediaSegment, index: Int, in playlist: MediaPlaylist, state: inout DeliveryState) async throws {
        let msn = playlist.mediaSequenceNumber(ofSegmentAt: index)
        if segment.gap {
            // EXT-X-GAP: nothing to load; the time it covers is missing from the input.
            statistics.skippedSegment(gap: true)
            state.restart = state.restart || info.isFragmentedMP4
            return
        }
        guard let url = URL(string: segment.uri, relativeTo: info.playlistURL)?.absoluteURL else {
            options.warn("segment \(msn) ('\(segment.uri)', line \(segment.line)) is not a valid URL; skipped")
            statistics.skippedSegment(gap: false)
            return
        }
        let header: FeedSegment
        do {
            header = try await feedSegment(for: segment, sequenceNumber: msn, index: index, in: playlist, firstPart: nil, state: &state)
        } catch let error as FetchError {
            try await failed(segment: msn, url: url, error: error, attempts: 1, state: &state)
            return
        }
        let deadline = ContinuousClock.now + fetcher.ioTimeout + timing(3 * max(1, segment.duration))
        let outcome = try await fetchWithRetries(url, range: segment.resolvedByteRange, deadline: deadline, header: header)
        switch outcome {
        case .complete:
            delivered(header, state: &state)
            try await push(.segmentEnd(complete: true))
            statistics.segmentRead(part: false)
            state.consecutiveFailures = 0
        case let .failed(error, attempts, delivered):
            if delivered > 0 {
                self.delivered(header, state: &state)
                try await push(.segmentEnd(complete: false))
                state.restart = true
            }
            try await failed(segment: msn, url: url, error: error, attempts: attempts, state: &state)
        }
    }

    private func failed(segment msn: Int, url: URL, error: FetchError, attempts: Int, state: inout DeliveryState) async throws {
        statistics.skippedSegment(gap: false)
        state.consecutiveFailures += 1
        var reason = error.description
        if reason.hasPrefix(error.url + ": ") { reason.removeFirst(error.url.count + 2) }
        // A reference livefilter does not follow (a local file, a private address) will not change on retry:
        // the origin is refused, not skipped segment after segment.
        if case .refused = error.kind {
            throw HLSInputError.refused(info.inputURL, reason: "segment \(msn) (\(url.absoluteString.forMessages)): \(reason)")
        }
        options.warn("segment \(msn) (\(url.absoluteString.forMessages)) skipped: \(reason)" + (attempts > 1 ? " (\(attempts) attempts)" : ""))
        if !info.isLive, state.consecutiveFailures >= options.consecutiveFailuresAllowed {
            throw HLSInputError.segmentsFailing(info.inputURL, reason: "\(state.consecutiveFailures) segments in a row failed; the last: \(error)")
        }
    }

    /// The header of a segment's bytes: timeline, initialization section and key, fetched as needed.
    func feedSegment(for segment: MediaSegment?, sequenceNumber msn: Int, index: Int?, in playlist: MediaPlaylist,
                             firstPart: Int?, state: inout DeliveryState) async throws -> FeedSegment {
        let discontinuitySequence: Int
        let date: Date?
        let keys: [EncryptionKey]
        let map: MediaInitializationSection?
        if let index {
            discontinuitySequence = playlist.discontinuitySequenceNumber(ofSegmentAt: index)
            date = playlist.programDateTime(ofSegmentAt: index)
            keys = playlist.segments[index].keys
            map = playlist.initializationSection(ofSegmentAt: index)
        } else {
            let open = playlist.segmentInProgress
            discontinuitySequence = playlist.discontinuitySequence + playlist.segments.count(where: \.discontinuity) + (open?.discontinuity == true ? 1 : 0)
            date = playlist.programDateTimeOfSegmentInProgress
            keys = open?.keys ?? playlist.segments.last?.keys ?? []
            map = open?.map ?? playlist.segments.last?.map ?? playlist.map
        }
        var header = FeedSegment(sequenceNumber: msn, discontinuitySequence: discontinuitySequence, uri: segment?.uri ?? "",
                                 duration: segment?.duration ?? 0, programDateTime: date, aes128: nil, initialization: nil,
                                 restart: state.restart, firstPart: firstPart)
        header.cueMarkers = index.map { playlist.segments[$0].cueMarkers } ?? []
        header.dateRanges = playlist.dateRanges
        if let previous = state.timeline, previous != discontinuitySequence { header.restart = true }
        if state.forceNewTimeline { header.discontinuitySequence = (state.timeline ?? discontinuitySequence) + 1_000_000 }
        if let key = keys.first(where: { $0.method != .none }) {
            header.aes128 = AESParameters(key: try await keyBytes(key, state: &state),
                                          iv: key.initializationVector(mediaSequenceNumber: msn).bytes)
        }
        if let map { header.initialization = try await initialization(map, state: &state) }
        return header
    }

    /// Marks the header as delivered: the state's timeline moves on.
    func delivered(_ header: FeedSegment, state: inout DeliveryState) {
        state.timeline = header.discontinuitySequence
        state.forceNewTimeline = false
        state.restart = false
    }

    private func keyBytes(_ key: EncryptionKey, state: inout DeliveryState) async throws -> [UInt8] {
        guard let uri = key.uri, let url = URL(string: uri, relativeTo: info.playlistURL)?.absoluteURL else {
            throw FetchError(kind: .refused("EXT-X-KEY has no usable URI"), url: key.uri ?? "")
        }
        if let cached = state.keys[url.absoluteString] { return cached }
        let bytes = try await withRetries { try await self.fetcher.data(url, maxBytes: 1024).bytes }
        guard bytes.count == 16 else {
            throw FetchError(kind: .transport("an AES-128 key is 16 bytes, this one \(bytes.count)"), url: url.absoluteString)
        }
        state.keys[url.absoluteString] = bytes
        return bytes
    }

    private func initialization(_ map: MediaInitializationSection, state: inout DeliveryState) async throws -> InitializationBytes {
        let identity = map.uri + (map.byteRange.map { "@\($0)" } ?? "")
        if let cached = state.maps[identity] { return cached }
        guard let url = URL(string: map.uri, relativeTo: info.playlistURL)?.absoluteURL else {
            throw FetchError(kind: .refused("EXT-X-MAP's URI is not a valid URL"), url: map.uri)
        }
        let range = map.byteRange.map { ByteRange(length: $0.length, offset: $0.offset ?? 0) }
        let bytes = try await withRetries { try await self.fetcher.data(url, range: range, maxBytes: 16 << 20).bytes }
        var section = InitializationBytes(identity: identity, bytes: bytes)
        if let key = map.keys.first(where: { $0.method != .none }) {
            guard let iv = key.iv else {
                throw FetchError(kind: .refused("an encrypted EXT-X-MAP needs an IV"), url: map.uri)
            }
            section.aes128 = AESParameters(key: try await keyBytes(key, state: &state), iv: iv.bytes)
        }
        state.maps[identity] = section
        return section
    }

    /// Retries a small fetch within `--io-timeout` (keys, maps).
    func withRetries<T>(_ operation: () async throws -> T) async throws -> T {
        let started = ContinuousClock.now
        var attempt = 0
        while true {
            do { return try await operation() } catch {
                attempt += 1
                if Task.isCancelled { throw Stopped() }
                if (error as? FetchError)?.isPermanent == true || ContinuousClock.now - started >= fetcher.ioTimeout { throw error }
                statistics.retried()
                _ = await RetryPolicy.segment.wait(afterFailures: attempt)
            }
        }
    }

    /// How long a failing resource is retried: `--io-timeout`; a 404 (usually for good in a VOD
    /// stream, while a live origin or its CDN may be a moment behind its playlist) for at most a
    /// second, or a target duration when live.
    func retryWindow(for error: FetchError) -> Duration {
        guard error.kind == .notFound else { return fetcher.ioTimeout }
        return min(fetcher.ioTimeout, info.isLive ? timing(Double(max(1, info.targetDuration))) : .seconds(1))
    }

    enum FetchOutcome {
        case complete
        case failed(FetchError, attempts: Int, delivered: Int)
    }

    /// Streams a resource into the feed (the header first, with the first byte), retrying a failed
    /// attempt within `--io-timeout` of the first failure, with backoff; a retry resumes after the
    /// bytes already delivered.
    func fetchWithRetries(_ url: URL, range: ByteRange?, deadline: ContinuousClock.Instant, header: FeedSegment?,
                          prefetched: [UInt8]? = nil) async throws -> FetchOutcome {
        let progress = Mutex<(delivered: Int, headerSent: Bool)>((0, header == nil))
        let feed = self.feed
        let statistics = self.statistics
        @Sendable func deliver(_ bytes: [UInt8]) async throws {
            let needsHeader = progress.withLock { !$0.headerSent }
            if needsHeader, let header { try await feed.push(.segment(header)); progress.withLock { $0.headerSent = true } }
            try await feed.push(.bytes(bytes))
            progress.withLock { $0.delivered += bytes.count }
            statistics.read(bytes: bytes.count)
        }
        if let prefetched {
            try await deliver(prefetched)
            return .complete
        }
        var firstFailure: ContinuousClock.Instant?
        var attempts = 0
        while true {
            attempts += 1
            let resumeAt = progress.withLock { $0.delivered }
            let skipped = Mutex(0)
            do {
                try await fetcher.stream(url, range: range, deadline: deadline) { chunk in
                    // A retry starts the resource again: drop what was delivered before.
                    var view = chunk.readableBytesView[...]
                    let drop = skipped.withLock { done -> Int in
                        let n = min(view.count, resumeAt - done)
                        done += n
                        return n
                    }
                    view = view.dropFirst(drop)
                    if !view.isEmpty { try await deliver(Array(view)) }
                }
                if progress.withLock({ $0.delivered }) == 0, let header {
                    // An empty segment still marks its place (its timeline, its key).
                    try await feed.push(.segment(header))
                }
                return .complete
            } catch let caught {
                if Task.isCancelled || self.feed.isCancelled { throw Stopped() }
                let error = caught as? FetchError ?? FetchError(kind: .transport("\(caught)"), url: url.absoluteString)
                let now = ContinuousClock.now
                firstFailure = firstFailure ?? now
                let delivered = progress.withLock { $0.delivered }
                if error.isPermanent || now - firstFailure! >= retryWindow(for: error) || now >= deadline {
                    return .failed(error, attempts: attempts, delivered: delivered)
                }
                statistics.retried()
                _ = await RetryPolicy.segment.wait(afterFailures: attempts)
            }
        }
    }
}

extension MediaPlaylist {
    /// The wall-clock time of `segments[index]`'s first sample: its own EXT-X-PROGRAM-DATE-TIME, or
    /// the last one before it plus the durations between (not across a discontinuity).
    public func programDateTime(ofSegmentAt index: Int) -> Date? {
        var elapsed = 0.0
        var i = index
        while i >= 0 {
            if let date = segments[i].programDateTime { return date.addingTimeInterval(elapsed) }
            if segments[i].discontinuity { return nil }
            i -= 1
            if i >= 0 { elapsed += segments[i].duration }
        }
        return nil
    }

    /// The wall-clock time of the segment in progress (LL-HLS).
    public var programDateTimeOfSegmentInProgress: Date? {
        if let date = segmentInProgress?.programDateTime { return date }
        if segmentInProgress?.discontinuity == true { return nil }
        guard let last = segments.indices.last, let date = programDateTime(ofSegmentAt: last) else { return nil }
        return date.addingTimeInterval(segments[last].duration)
    }
}
