import Foundation
import HLS
import Synchronization

/// How the HLS reader behaves; the CLI's input options.
public struct HLSReaderOptions: Sendable {
    /// A request that makes no progress for this long fails; a failing segment is retried within it.
    public var ioTimeout: Duration = .seconds(10)
    public var maxRedirects = 5
    public var variant: VariantChoice = .highest
    public var liveStart: LiveStart = .edge
    /// Bytes of media that may wait for the demuxer.
    public var feedCapacity = 48 << 20
    /// A VOD input fails after this many segments in a row could not be read.
    public var consecutiveFailuresAllowed = 3
    /// Whether a remote playlist's references may reach loopback, link-local and private addresses:
    /// nil decides by the input (yes when it is itself on such an address), as `--allow-private-networks`.
    public var allowPrivateNetworks: Bool?
    /// One line per fault the run survives (a segment skipped, a restarted origin).
    public var warn: @Sendable (String) -> Void = { _ in }
    /// Dimensions of the reader's metrics (`livefilter_input_…`): the run's, so two runs in one
    /// process count apart.
    public var metricDimensions: [(String, String)] = []
    public init() {}
}

/// What the reader learned when it opened the input.
public struct HLSStreamInfo: Sendable {
    /// The media playlist read (after redirects).
    public var playlistURL: URL
    /// The URL given (a master or the media playlist).
    public var inputURL: String
    public var isLive: Bool
    /// VOD: the sum of the segments' durations.
    public var duration: Double?
    public var targetDuration: Int
    /// The variant chosen from a master playlist, its index and how many there were.
    public var variant: VariantStream?
    public var variantIndex: Int?
    public var variantCount: Int
    /// LL-HLS: EXT-X-PART-INF's PART-TARGET.
    public var partTarget: Double?
    public var canBlockReload: Bool
    /// Segments are fMP4 (an EXT-X-MAP), not MPEG-TS.
    public var isFragmentedMP4: Bool
    /// The media playlist of the variant's audio rendition (EXT-X-MEDIA TYPE=AUDIO with a URI in the
    /// variant's AUDIO group: DEFAULT=YES, else the first), read by a reader of its own.
    public var audioRendition: URL?
    /// What the master says of closed captions in the chosen variant's video (its CLOSED-CAPTIONS
    /// group's INSTREAM-IDs, or NONE); unknown without a master or the attribute.
    public var closedCaptions: ClosedCaptionDeclaration = .unknown
}

/// A playlist's number of seconds as a `Duration` for timing: NaN and negatives as 0, at most a
/// day (a hostile EXTINF of 1e20 would overflow `Duration`).
func timing(_ seconds: Double) -> Duration {
    guard seconds.isFinite, seconds > 0 else { return .zero }
    return .milliseconds(Int64((min(seconds, 86_400) * 1000).rounded()))
}

/// Our HLS client: reads a master or media playlist, picks the variant, then keeps the media
/// playlist current (on time per RFC 8216 §6.3.4, or by blocking reload) and fetches its segments,
/// or its parts as they are published, in order into a `ByteFeed` that the demuxer reads. A failing
/// segment is retried, then skipped with a warning; a failing reload is retried until the run's
/// stall timeout ends it.
public final class HLSReader: Sendable {
    public let info: HLSStreamInfo
    public let feed: ByteFeed
    public let statistics: HLSReaderStatistics
    let fetcher: ResourceFetcher
    let options: HLSReaderOptions
    let initial: MediaPlaylist
    /// When the load of `initial` began: the reload schedule counts from it.
    let initialLoad: ContinuousClock.Instant
    let latest: LatestPlaylist
    private let tasks = Mutex<[Task<Void, Never>]>([])

    init(info: HLSStreamInfo, playlist: MediaPlaylist, loaded: ContinuousClock.Instant, fetcher: ResourceFetcher, options: HLSReaderOptions) {
        self.info = info
        self.initial = playlist
        self.initialLoad = loaded
        self.fetcher = fetcher
        // Every warning names URLs from the origin: secrets hidden, control characters escaped, here once.
        var options = options
        let warn = options.warn
        options.warn = { warn($0.forLogs) }
        self.options = options
        feed = ByteFeed(capacity: options.feedCapacity)
        statistics = HLSReaderStatistics(dimensions: options.metricDimensions)
        latest = LatestPlaylist(playlist)
    }

    /// Reads the playlist at `input` (a URL or a local path) and, for a master, the chosen variant's.
    public static func open(_ input: String, options: HLSReaderOptions) async throws(HLSInputError) -> HLSReader {
        let isNetwork = input.contains("://") && !input.lowercased().hasPrefix("file:")
        let url: URL
        if isNetwork {
            guard let u = URL(string: input) else { throw .notPlaylist(input, reason: "not a valid URL") }
            url = u
        } else {
            url = input.lowercased().hasPrefix("file:") ? (URL(string: input) ?? URL(fileURLWithPath: String(input.dropFirst(5))))
                                                       : URL(fileURLWithPath: input)
        }
        let access = await NetworkAccess.forInput(url, allowPrivateNetworks: options.allowPrivateNetworks)
        let fetcher = ResourceFetcher(ioTimeout: options.ioTimeout, maxRedirects: options.maxRedirects, access: access)
        var loadStarted = ContinuousClock.now
        // The input is the operator's to name; what it references (its redirects too) is checked.
        let (text, finalURL) = try await fetchPlaylist(url, input: input, fetcher: fetcher, checked: false)
        let parsed: Playlist
        do { parsed = try PlaylistParser.parse(text) } catch { throw HLSInputError(parsing: error, url: input) }

        var media: MediaPlaylist
        var mediaURL = finalURL
        var chosen: (VariantStream, Int)?
        var variantCount = 1
        var audioRendition: URL?
        switch parsed {
        case let .media(m):
            media = m
        case let .master(master):
            let me = finalURL.standardized.absoluteString
            for v in master.variants {
                if let r = URL(string: v.uri, relativeTo: finalURL)?.absoluteURL, r.standardized.absoluteString == me {
                    throw .notPlaylist(input, reason: "the master playlist lists itself as a variant (line \(v.line))")
                }
            }
            guard let variant = options.variant.pick(from: master.variants),
                  let index = master.variants.firstIndex(of: variant) else {
                throw .notPlaylist(input, reason: "the master playlist lists no variant")
            }
            guard let variantURL = URL(string: variant.uri, relativeTo: finalURL)?.absoluteURL else {
                throw .notPlaylist(input, reason: "the variant URI '\(variant.uri)' (line \(variant.line)) is not a valid URL")
            }
            chosen = (variant, index)
            variantCount = master.variants.count
            if let group = variant.audioGroup {
                let renditions = master.media.filter { $0.kind == .audio && $0.groupID == group && !$0.uri.isEmpty }
                if let chosen = renditions.first(where: \.isDefault) ?? renditions.first {
                    guard let rendition = URL(string: chosen.uri, relativeTo: finalURL)?.absoluteURL else {
                        throw .notPlaylist(input, reason: "the audio rendition URI '\(chosen.uri.forMessages)' is not a valid URL")
                    }
                    // Read by a reader of its own (MediaIO), which takes it as an input: checked here, as a reference.
                    do { try await fetcher.check(rendition) } catch { throw .refused(input, reason: "its audio rendition \(error.description)") }
                    audioRendition = rendition
                }
            }
            let variantText: String
            do {
                loadStarted = .now
                (variantText, mediaURL) = try await fetchPlaylist(variantURL, input: variantURL.absoluteString, fetcher: fetcher)
            } catch {
                if case .notFound = error { throw error }
                if case let .refused(_, reason) = error { throw .refused(input, reason: "its variant \(reason)") }
                let seconds = HLSNumber.shortest(Double(options.ioTimeout.components.seconds))
                var why = error.description
                if case let .unreadable(_, reason) = error { why = reason }
                throw .unreadable(variantURL.absoluteString, reason: "the variant of \(input) chosen to play (\(options.variant)) did not answer within "
                                  + "\(seconds) s (--io-timeout): \(why)")
            }
            do {
                guard case let .media(m) = try PlaylistParser.parse(variantText) else {
                    throw HLSInputError.notPlaylist(variantURL.absoluteString, reason: "a master playlist's variant is itself a master playlist")
                }
                media = m
            } catch let error as HLSInputError {
                throw error
            } catch let error as PlaylistParseError {
                throw HLSInputError(parsing: error, url: variantURL.absoluteString)
            } catch {
                throw .notPlaylist(variantURL.absoluteString, reason: "\(error)")
            }
        }
        if media.iFramesOnly { throw .notPlaylist(input, reason: "an I-frame-only playlist (EXT-X-I-FRAMES-ONLY) has no whole pictures to play") }
        let isLive = !media.endList && media.playlistType != .vod
        if !isLive && media.segments.isEmpty { throw .notPlaylist(input, reason: "the playlist has no segments") }
        if let key = (media.segments.compactMap(\.key) + (media.map?.keys.filter { $0.method != .none } ?? [])).first,
           key.method != .aes128 {
            throw .notPlaylist(input, reason: "its segments are encrypted with \(key.method) (only AES-128 is supported)")
        }
        var info = HLSStreamInfo(
            playlistURL: mediaURL, inputURL: input, isLive: isLive,
            duration: isLive ? nil : media.segments.reduce(0) { $0 + ($1.gap ? $1.duration : $1.duration) },
            targetDuration: media.targetDuration, variant: chosen?.0, variantIndex: chosen?.1, variantCount: variantCount,
            partTarget: media.partTarget, canBlockReload: media.serverControl?.canBlockReload ?? false,
            isFragmentedMP4: media.map != nil || media.segments.contains { $0.map != nil }, audioRendition: audioRendition)
        if case let .master(master) = parsed, let variant = chosen?.0 {
            switch variant.closedCaptions {
            case let .group(group)?:
                let ids = master.media.filter { $0.kind == .closedCaptions && $0.groupID == group }.compactMap(\.instreamID)
                info.closedCaptions = ids.isEmpty ? .unknown : .services(ids)
            case .none?: info.closedCaptions = .none
            case nil: break
            }
        }
        return HLSReader(info: info, playlist: media, loaded: loadStarted, fetcher: fetcher, options: options)
    }

    static func fetchPlaylist(_ url: URL, input: String, fetcher: ResourceFetcher,
                              checked: Bool = true) async throws(HLSInputError) -> (String, URL) {
        let bytes: [UInt8], final: URL
        do {
            (bytes, final) = try await fetcher.data(url, maxBytes: 8 << 20, checked: checked)
        } catch {
            switch error.kind {
            case .notFound: throw .notFound(input)
            case .refused: throw .refused(input, reason: error.description)
            case .tooLarge: throw .notPlaylist(input, reason: "it is larger than 8 MB; not a playlist")
            default:
                var reason = error.description
                if reason.hasPrefix(error.url + ": ") { reason.removeFirst(error.url.count + 2) }
                throw .unreadable(input, reason: reason)
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .notPlaylist(input, reason: "it is not UTF-8 text") }
        guard text.hasPrefix("#EXTM3U") || text.hasPrefix("\u{FEFF}#EXTM3U") else {
            throw .notPlaylist(input, reason: "it does not start with #EXTM3U")
        }
        return (text, final)
    }

    /// Starts reading: a live stream at its edge (or oldest segment), a VOD one at the segment that
    /// holds `seconds` (0: the first).
    public func start(at seconds: Double = 0) {
        let watcher = info.isLive ? Task { await self.watchPlaylist() } : nil
        let downloader = Task { await self.download(startingAt: seconds) }
        tasks.withLock { $0 = [downloader] + (watcher.map { [$0] } ?? []) }
    }

    /// Stops reading at once; the feed ends as cancelled.
    public func stop() {
        feed.cancel()
        latest.close()
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }

    deinit {
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }
}

/// The newest media playlist, and a way to wait for a newer one.
final class LatestPlaylist: Sendable {
    private struct State {
        var version = 0
        var playlist: MediaPlaylist
        var closed = false
        var waiters: [(Int, CheckedContinuation<Void, Never>)] = []
    }
    private let state: Mutex<State>

    init(_ playlist: MediaPlaylist) { state = Mutex(State(playlist: playlist)) }

    var current: (version: Int, playlist: MediaPlaylist) { state.withLock { ($0.version, $0.playlist) } }

    func publish(_ playlist: MediaPlaylist) {
        let waiters = state.withLock { s in
            s.version += 1
            s.playlist = playlist
            defer { s.waiters = [] }
            return s.waiters.map(\.1)
        }
        waiters.forEach { $0.resume() }
    }

    func close() {
        let waiters = state.withLock { s in
            s.closed = true
            defer { s.waiters = [] }
            return s.waiters.map(\.1)
        }
        waiters.forEach { $0.resume() }
    }

    /// Waits until a version newer than `version` is published (or the reader stops).
    func waitForNewer(than version: Int) async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { s in
                if s.version > version || s.closed { return true }
                s.waiters.append((version, continuation))
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
