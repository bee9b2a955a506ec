import Foundation
import HLS
import Testing

/// The server's side of delta updates (`MediaPlaylist.deltaUpdate(skipping:)`): what it skips, what it
/// keeps, and the law a client relies on — an earlier full version of the playlist, merged with the
/// delta (`applying(delta:)`), is the full playlist again.
struct DeltaUpdateTests {
    @Test func theSpecPlaylistSkipsWhatEndsBeforeTheBoundary() throws {
        // CAN-SKIP-UNTIL=12 over 4.00008 s segments 266…272: 270, 271 and 272 last 12.00024 s, so the
        // Skip Boundary falls inside 270; 266…269 end before it and are skipped.
        let full = try parseMedia(LowLatencyExamples.spec)
        let delta = full.deltaUpdate(skipping: .segments)
        let expected = """
            #EXTM3U
            #EXT-X-VERSION:9
            #EXT-X-TARGETDURATION:4
            #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12,PART-HOLD-BACK=1
            #EXT-X-PART-INF:PART-TARGET=0.33334
            #EXT-X-MEDIA-SEQUENCE:266
            #EXT-X-MAP:URI="init.mp4"
            #EXT-X-SKIP:SKIPPED-SEGMENTS=4
            #EXTINF:4.00008,
            fileSequence270.mp4

            """
        let text = delta.render(durations: .exact)
        #expect(text.hasPrefix(expected), "\(text)")
        #expect(text.hasSuffix(full.render(durations: .exact).components(separatedBy: "fileSequence270.mp4\n")[1]),
                "everything after the first segment kept is the full playlist's")
        let merged = try full.applying(delta: try parseMedia(text))
        var version9 = full
        version9.version = 9
        #expect(merged.withoutLines() == version9.withoutLines())
    }

    @Test func v2SaysNoDateRangesWereRemoved() throws {
        var full = try parseMedia(LowLatencyExamples.spec)
        full.serverControl?.canSkipDateRanges = true
        let text = full.deltaUpdate(skipping: .segmentsAndDateRanges).render(durations: .exact)
        #expect(text.contains("#EXT-X-VERSION:10\n"))
        #expect(text.contains("#EXT-X-SKIP:SKIPPED-SEGMENTS=4,RECENTLY-REMOVED-DATERANGES=\"\"\n"))
        #expect(try parseMedia(text).skip == PlaylistSkip(skippedSegments: 4, recentlyRemovedDateRanges: []))
    }

    @Test func nothingToSkipGivesTheFullPlaylist() throws {
        // Apple's demo: six 3.98933 s segments are 23.9 s, under its 24 s boundary.
        let demo = try parseMedia(LowLatencyExamples.appleDemo)
        #expect(demo.deltaUpdate(skipping: .segments) == demo)
        var ended = try parseMedia(LowLatencyExamples.spec)
        ended.endList = true
        #expect(ended.deltaUpdate(skipping: .segments) == ended, "EXT-X-ENDLIST: directives are ignored")
        var noBoundary = try parseMedia(LowLatencyExamples.spec)
        noBoundary.serverControl?.canSkipUntil = nil
        #expect(noBoundary.deltaUpdate(skipping: .segments) == noBoundary)
    }

    /// The round trip over a synthetic stream with everything a skip must carry across: keys that
    /// rotate, discontinuities with a new EXT-X-MAP, rates, dates, byte ranges with omitted offsets,
    /// parts, hints; each playlist merged into several earlier versions of itself.
    @Test(arguments: [1, 2, 3, 4, 5, 6])
    func anEarlierVersionMergedWithTheDeltaIsTheFullPlaylist(seed: Int) throws {
        let stream = SyntheticLiveStream(seed: seed)
        var checked = 0
        for end in stride(from: 24, through: 60, by: 5 + seed % 3) {
            for open in [0, 2] {
                let full = try parseMedia(stream.playlist(end: end, openParts: open))
                let deltaText = full.deltaUpdate(skipping: .segments).render(durations: .exact)
                let delta = try parseMedia(deltaText)
                #expect((delta.skip?.skippedSegments ?? 0) > 0, "seed \(seed), end \(end): something is old enough")
                #expect(delta.nextMediaSequenceNumber == full.nextMediaSequenceNumber)
                #expect(delta.segments.reduce(0) { $0 + $1.duration } >= full.serverControl!.canSkipUntil!, "the boundary's seconds are kept")
                // Earlier versions a client may hold: up to half the boundary old (§6.3.7), whole segments
                // or parts behind.
                for behind in 0...4 {
                    let previous = try parseMedia(stream.playlist(end: end - behind, openParts: behind == 0 ? open : 1))
                    let merged = try previous.applying(delta: delta)
                    #expect(merged.resolved() == full.resolved(), "seed \(seed), end \(end), \(behind) behind:\n\(deltaText)")
                    checked += 1
                }
            }
        }
        #expect(checked > 30)
    }
}

/// A live LL-HLS stream whose playlist can be written at any moment, as a writer would: a window of
/// the last 16 segments, each segment's tags decided by its number alone (so every version agrees
/// about a segment), and the tags in force re-stated at the window's first segment.
struct SyntheticLiveStream {
    let seed: Int
    let window = 16

    private func unit(_ msn: Int, _ salt: Int) -> Double {
        var x = UInt64(truncatingIfNeeded: msn &* 0x9E37_79B9 &+ seed &* 0x85EB_CA6B &+ salt &* 0xC2B2_AE35)
        x ^= x >> 33; x &*= 0xFF51_AFD7_ED55_8CCD; x ^= x >> 33; x &*= 0xC4CE_B9FE_1A85_EC53; x ^= x >> 33
        return Double(x % 10_000) / 10_000
    }

    private func duration(_ msn: Int) -> Double { 1.9 + (unit(msn, 1) * 200).rounded() / 1000 }
    private func discontinuity(_ msn: Int) -> Bool { msn > 0 && unit(msn, 2) < 0.12 }
    /// Maps change at discontinuities: the map's number is the count of discontinuities so far.
    private func mapNumber(_ msn: Int) -> Int { (0...msn).count(where: discontinuity) }
    private func keyNumber(_ msn: Int) -> Int { msn / 5 }
    private func rate(_ msn: Int) -> Int { 800 + 100 * ((msn / 3) % 4) }
    private var byteRanges: Bool { seed % 2 == 0 }

    /// The playlist with segments up to `end` (exclusive) complete and `openParts` parts of the next.
    func playlist(end: Int, openParts: Int) -> String {
        let first = max(0, end - window)
        let partDuration = 0.5
        var lines = ["#EXTM3U", "#EXT-X-VERSION:9", "#EXT-X-TARGETDURATION:2",
                     "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12,PART-HOLD-BACK=1.5",
                     "#EXT-X-PART-INF:PART-TARGET=0.5", "#EXT-X-MEDIA-SEQUENCE:\(first)"]
        let discontinuities = (0..<first).count(where: discontinuity)
        if discontinuities > 0 { lines.append("#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuities)") }
        func key(_ n: Int) -> String { "#EXT-X-KEY:METHOD=AES-128,URI=\"key\(n).bin\",IV=0x\(String(n, radix: 16))" }
        func map(_ n: Int) -> String { "#EXT-X-MAP:URI=\"init\(n).mp4\"" }
        lines.append(key(keyNumber(first)))
        lines.append(map(mapNumber(first)))
        for msn in first..<end {
            if msn > first, discontinuity(msn) { lines += ["#EXT-X-DISCONTINUITY", map(mapNumber(msn))] }
            if msn == first, discontinuity(msn) { lines.insert("#EXT-X-DISCONTINUITY", at: lines.count - 2) }
            if msn > first, keyNumber(msn) != keyNumber(msn - 1) { lines.append(key(keyNumber(msn))) }
            if msn % 3 == 0 { lines.append("#EXT-X-PROGRAM-DATE-TIME:\(date(msn))") }
            // Parts on every segment of the window (a writer that drops old segments' parts makes two
            // versions disagree about a segment, which `resolved()` does not hide).
            for p in 0..<4 {
                lines.append("#EXT-X-PART:DURATION=\(partDuration),URI=\"part\(msn).\(p).mp4\"" + (p == 0 ? ",INDEPENDENT=YES" : ""))
            }
            if !byteRanges, msn == first || rate(msn) != rate(msn - 1) { lines.append("#EXT-X-BITRATE:\(rate(msn))") }
            lines.append("#EXTINF:\(duration(msn)),")
            if byteRanges {
                // Four segments a file; an offset only where the segment before is not in the playlist.
                let offset = (msn % 4) * 10_000
                lines.append("#EXT-X-BYTERANGE:10000" + (msn % 4 == 0 || msn == first ? "@\(offset)" : ""))
                lines.append("group\(msn / 4).mp4")
            } else {
                lines.append("seg\(msn).mp4")
            }
        }
        if discontinuity(end) { lines += ["#EXT-X-DISCONTINUITY", map(mapNumber(end))] }
        if keyNumber(end) != keyNumber(end - 1) { lines.append(key(keyNumber(end))) }
        for p in 0..<openParts {
            lines.append("#EXT-X-PART:DURATION=\(partDuration),URI=\"part\(end).\(p).mp4\"" + (p == 0 ? ",INDEPENDENT=YES" : ""))
        }
        lines.append("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part\(end).\(openParts).mp4\"")
        lines.append("#EXT-X-RENDITION-REPORT:URI=\"../other/index.m3u8\",LAST-MSN=\(end),LAST-PART=\(max(0, openParts - 1))")
        return lines.joined(separator: "\n") + "\n"
    }

    private func date(_ msn: Int) -> String {
        let seconds = 1_700_000_000 + msn * 2
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(seconds)))
    }
}

extension MediaPlaylist {
    /// The playlist as the media it names: lines, the version and how a tag was written (a map or a
    /// byte range offset stated or implied) left out, so two texts of the same media compare equal.
    /// A map's keys are left out too: they are the keys in force where the text names the map, which
    /// a window that starts later names at its top.
    func resolved() -> MediaPlaylist {
        var copy = withoutLines()
        copy.version = nil
        copy.map?.keys = []
        for i in copy.segments.indices {
            copy.segments[i].map = initializationSection(ofSegmentAt: i)
            copy.segments[i].map?.keys = []
            copy.segments[i].byteRange = copy.segments[i].resolvedByteRange
        }
        if copy.segmentInProgress != nil {
            copy.segmentInProgress?.map = segmentInProgress?.map ?? map
            copy.segmentInProgress?.map?.keys = []
        }
        return copy
    }
}
