import Foundation
import HLS

/// A segment being read part by part (LL-HLS).
struct OpenSegment {
    var sequenceNumber: Int
    var nextPart: Int
    /// A part failed: the rest of this segment is not read (its bytes would not follow on).
    var broken = false
}

extension HLSReader {
    /// Reads the listed parts of the segment being published, from where the last call stopped,
    /// then asks for the hinted part ahead of its listing. Its first part starts the segment in the
    /// feed; a segment already under way when the reader arrived is read whole later instead.
    func deliverParts(of inProgress: SegmentInProgress, sequenceNumber msn: Int, in playlist: MediaPlaylist,
                      state: inout DeliveryState) async throws {
        var open = state.open?.sequenceNumber == msn ? state.open! : OpenSegment(sequenceNumber: msn, nextPart: 0)
        if state.open == nil, state.timeline == nil, !inProgress.parts[0].independent {
            // The very first bytes must start with a picture the decoder can use on its own.
            return
        }
        while open.nextPart < inProgress.parts.count {
            if !open.broken {
                try await deliverPart(inProgress.parts[open.nextPart], index: open.nextPart, open: &open, in: playlist, state: &state)
            }
            open.nextPart += 1
            state.open = open
        }
        startHintedPart(in: playlist, state: &state)
    }

    /// A segment read part by part is complete in the playlist: reads the parts it still lacks and ends it.
    func deliverRemainingParts(of segment: MediaSegment, index: Int, in playlist: MediaPlaylist, from nextPart: Int,
                               state: inout DeliveryState) async throws {
        var open = state.open!
        let msn = playlist.mediaSequenceNumber(ofSegmentAt: index)
        if segment.parts.count < nextPart {
            // Its parts are no longer listed: the tail cannot be placed.
            options.warn("the parts of segment \(msn) after part \(nextPart - 1) are no longer listed; the rest of the segment is skipped")
            open.broken = true
        }
        while !open.broken && open.nextPart < segment.parts.count {
            try await deliverPart(segment.parts[open.nextPart], index: open.nextPart, open: &open, in: playlist, state: &state)
            open.nextPart += 1
        }
        state.open = nil
        try await push(.segmentEnd(complete: !open.broken))
        if open.broken { state.restart = true } else { statistics.segmentRead(part: false) }
    }

    private func deliverPart(_ part: PartialSegment, index: Int, open: inout OpenSegment, in playlist: MediaPlaylist,
                             state: inout DeliveryState) async throws {
        guard !part.gap, let url = URL(string: part.uri, relativeTo: info.playlistURL)?.absoluteURL else {
            options.warn("part \(index) of segment \(open.sequenceNumber) is \(part.gap ? "a gap" : "not a valid URL ('\(part.uri)')"); the rest of the segment is skipped")
            try await breakSegment(&open, state: &state)
            return
        }
        var header: FeedSegment?
        if index == 0 {
            do {
                header = try await partHeader(sequenceNumber: open.sequenceNumber, in: playlist, state: &state)
            } catch let error as FetchError {
                options.warn("segment \(open.sequenceNumber) skipped: \(error)")
                open.broken = true
                statistics.skippedSegment(gap: false)
                return
            }
        }
        var prefetched: [UInt8]?
        if let hint = state.hint, hint.url == url, hint.offset == part.resolvedByteRange?.offset {
            // The hint's request is a task of its own: a stop while it is held must end it too.
            let task = hint.task
            prefetched = await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
            state.hint = nil
        }
        let deadline = ContinuousClock.now + fetcher.ioTimeout + timing(3 * max(0.5, part.duration))
        let outcome = try await fetchWithRetries(url, range: part.resolvedByteRange, deadline: deadline, header: header, prefetched: prefetched)
        switch outcome {
        case .complete:
            if let header { delivered(header, state: &state) }
            statistics.segmentRead(part: true)
            try await push(.partEnd)
        case let .failed(error, attempts, _):
            options.warn("part \(index) of segment \(open.sequenceNumber) (\(url.absoluteString)) failed: \(error)"
                         + (attempts > 1 ? " (\(attempts) attempts)" : "") + "; the rest of the segment is skipped")
            try await breakSegment(&open, state: &state)
        }
    }

    private func breakSegment(_ open: inout OpenSegment, state: inout DeliveryState) async throws {
        if open.nextPart > 0 { try await push(.segmentEnd(complete: false)) }
        open.broken = true
        state.restart = true
        statistics.skippedSegment(gap: false)
    }

    private func partHeader(sequenceNumber msn: Int, in playlist: MediaPlaylist, state: inout DeliveryState) async throws -> FeedSegment {
        try await feedSegment(for: nil, sequenceNumber: msn, index: nil, in: playlist, firstPart: 0, state: &state)
    }

    /// Requests the part the playlist hints at (EXT-X-PRELOAD-HINT) before it is listed: the server
    /// holds the request until the part exists, so its bytes are here the moment it is published.
    func startHintedPart(in playlist: MediaPlaylist, state: inout DeliveryState) {
        guard let hint = playlist.preloadHints.first(where: { $0.type == .part }),
              let url = URL(string: hint.uri, relativeTo: info.playlistURL)?.absoluteURL else { return }
        // An open-ended range ("the rest of the resource") is not asked for ahead.
        if hint.byteRangeStart != nil && hint.byteRangeLength == nil { return }
        if let current = state.hint, current.url == url, current.offset == hint.byteRangeStart { return }
        state.hint?.task.cancel()
        let range = hint.byteRangeLength.map { ByteRange(length: $0, offset: hint.byteRangeStart ?? 0) }
        let hold = timing(3 * Double(max(1, playlist.targetDuration)))
        let fetcher = self.fetcher
        state.hint = HintFetch(url: url, offset: hint.byteRangeStart, task: Task {
            try? await fetcher.data(url, range: range, maxBytes: 64 << 20, headTimeout: hold).bytes
        })
    }
}
