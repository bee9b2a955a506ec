import Foundation
import HLS

extension HLSReader {
    /// Keeps the live media playlist current until it ends (EXT-X-ENDLIST) or the reader stops:
    /// with blocking reload when the server offers it (`_HLS_msn`/`_HLS_part` for what comes next,
    /// asked again the moment an answer arrives), else on `ReloadSchedule`'s times.
    func watchPlaylist() async {
        var schedule = initialSchedule()
        let target = schedule.targetDuration
        var playlist = initial
        var failures = 0
        while !Task.isCancelled && !playlist.endList {
            let directives = Self.nextDirectives(after: playlist)
            if directives == nil, let next = schedule.nextLoad() {
                try? await Task.sleep(until: next, clock: .continuous)
                if Task.isCancelled { return }
            }
            let started = ContinuousClock.now
            let url = directives.flatMap { $0.url(for: info.playlistURL) } ?? info.playlistURL
            // A blocking request is held until what it asks for exists: up to three target durations (then 503).
            let hold = directives == nil ? nil : target * 3
            let loaded: MediaPlaylist
            do {
                let (bytes, _) = try await fetcher.data(url, maxBytes: 8 << 20, headTimeout: hold)
                guard let text = String(validating: bytes, as: UTF8.self),
                      case let .media(media) = try PlaylistParser.parse(text) else {
                    throw FetchError(kind: .transport("the reloaded playlist is not a media playlist"), url: url.absoluteString)
                }
                loaded = media.skip == nil ? media : try playlist.applying(delta: media)
            } catch {
                if Task.isCancelled { return }
                // A number out of bounds (or a reference refused) is the origin's doing, not a hiccup: the input is refused.
                if let parse = error as? PlaylistParseError, parse.isOutOfBounds {
                    feed.finish(.failed(HLSInputError(parsing: parse, url: info.playlistURL.absoluteString)))
                    latest.close()
                    return
                }
                statistics.reloadFailed()
                failures += 1
                // One line for a run of failures; the stall timeout decides when the input has gone.
                if failures == 1 { options.warn("reloading the playlist \(info.playlistURL.absoluteString.forMessages) failed (\(error)); retrying") }
                let backoff = RetryPolicy.reload.delay(afterFailures: failures)
                try? await Task.sleep(for: directives == nil ? max(backoff, target / 2) : backoff)
                continue
            }
            if failures > 0 { options.warn("the playlist \(info.playlistURL.absoluteString.forMessages) answers again after \(failures) failed reloads") }
            failures = 0
            statistics.reloaded(blocking: directives != nil)
            let newSegments = Self.segmentsAdded(from: playlist, to: loaded)
            schedule.loaded(at: started, newSegments: newSegments.map { timing($0.duration) },
                            newestEnd: newSegments.isEmpty ? nil : Self.newestMediaEnd(of: loaded))
            if directives == nil, !newSegments.isEmpty, let bound = schedule.discoveryBound(loadStart: started) {
                statistics.discovered(after: bound)
            }
            playlist = loaded
            latest.publish(loaded)
        }
    }

    /// The reload schedule after the first load.
    func initialSchedule() -> ReloadSchedule {
        var schedule = ReloadSchedule(targetDuration: timing(Double(max(1, initial.targetDuration))))
        schedule.loaded(at: initialLoad, newSegments: initial.segments.last.map { [timing($0.duration)] } ?? [],
                        newestEnd: Self.newestMediaEnd(of: initial))
        return schedule
    }

    /// Whether a live stream joined at its edge is better joined at the next load's edge: when the
    /// first reload lets the next segment go by (the first load came just after a publication, and
    /// the RFC's floor lets the next load come only after the one after), starting at the newest
    /// segment now would have the run find the next two at once, a segment late — a backlog that a
    /// loaded machine works off for tens of seconds, and three streams started together for longer.
    /// Starting at the next load's newest instead costs the output's start one or two segments and
    /// nothing after. Not when the wait would be long (over two target durations, or half the I/O
    /// timeout the opening waits within).
    func joinsAtNextLoad() -> Bool {
        guard info.isLive, options.liveStart == .edge, Self.nextDirectives(after: initial) == nil, !initial.endList else { return false }
        let schedule = initialSchedule()
        guard schedule.nextLoadLetsASegmentGoBy, let next = schedule.nextLoad() else { return false }
        let wait = ContinuousClock.now.duration(to: next)
        return wait <= schedule.targetDuration * 2 + .milliseconds(500) && wait <= options.ioTimeout / 2
    }

    /// What a blocking reload asks for next: the part after the last (LL-HLS), else the segment
    /// after the last; nil when the server does not block.
    static func nextDirectives(after playlist: MediaPlaylist) -> DeliveryDirectives? {
        guard playlist.serverControl?.canBlockReload == true, !playlist.endList else { return nil }
        if playlist.partTarget != nil, let last = playlist.lastPart {
            // The part after a completed segment's last is the next segment's first.
            if playlist.segmentInProgress == nil && last.mediaSequenceNumber == playlist.nextMediaSequenceNumber - 1 {
                return DeliveryDirectives(mediaSequenceNumber: playlist.nextMediaSequenceNumber, partIndex: 0)
            }
            return DeliveryDirectives(mediaSequenceNumber: last.mediaSequenceNumber, partIndex: last.partIndex + 1)
        }
        return DeliveryDirectives(mediaSequenceNumber: playlist.nextMediaSequenceNumber)
    }

    /// Where the newest segment's media ends on the source's clock (the last program date-time plus
    /// the durations from it), as an instant of ours; nil without a date-time since the last
    /// discontinuity (a date is not carried across one).
    static func newestMediaEnd(of playlist: MediaPlaylist) -> ContinuousClock.Instant? {
        var seconds = 0.0
        for segment in playlist.segments.reversed() {
            seconds += segment.duration
            if let date = segment.programDateTime {
                let end = date.addingTimeInterval(seconds).timeIntervalSinceNow
                guard end.isFinite, abs(end) < 86_400 else { return nil }
                return ContinuousClock.now + .milliseconds(Int64((end * 1000).rounded()))
            }
            if segment.discontinuity { return nil }
        }
        return nil
    }

    /// The segments of `new` after the last one of `old` (all of them after a restart that went back).
    static func segmentsAdded(from old: MediaPlaylist, to new: MediaPlaylist) -> [MediaSegment] {
        let oldNext = old.nextMediaSequenceNumber
        if new.nextMediaSequenceNumber < oldNext { return new.segments }
        let firstNew = max(0, oldNext - new.mediaSequenceNumber(ofSegmentAt: 0))
        return firstNew < new.segments.count ? Array(new.segments[firstNew...]) : []
    }
}

extension ReloadSchedule {
    /// How late a load that began at `loadStart` found the newest segment, at most (seconds).
    func discoveryBound(loadStart: Instant) -> Double? {
        guard let earliest else { return nil }
        let d = loadStart - earliest
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
