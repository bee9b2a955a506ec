import Foundation
import HLS
import Testing

/// `_HLS_msn`, `_HLS_part` and `_HLS_skip` (rfc8216bis §6.2.5): built by a client, read and judged by a server.
struct DeliveryDirectivesTests {
    @Test func aClientKeepsThePlaylistsOwnQuery() throws {
        let base = try #require(URL(string: "https://example.com/2M/waitForMSN.php?token=a%2Fb%20c&lang=en"))
        let url = DeliveryDirectives(mediaSequenceNumber: 273, partIndex: 2).url(for: base)
        #expect(url?.absoluteString == "https://example.com/2M/waitForMSN.php?token=a%2Fb%20c&lang=en&_HLS_msn=273&_HLS_part=2")
        // Directives of an earlier request are replaced, not repeated.
        let next = url.flatMap { DeliveryDirectives(mediaSequenceNumber: 273, partIndex: 3, skip: .segments).url(for: $0) }
        #expect(next?.absoluteString == "https://example.com/2M/waitForMSN.php?token=a%2Fb%20c&lang=en&_HLS_msn=273&_HLS_part=3&_HLS_skip=YES")
        let plain = try #require(URL(string: "https://example.com/live/index.m3u8"))
        #expect(DeliveryDirectives(skip: .segmentsAndDateRanges).url(for: plain)?.absoluteString
                == "https://example.com/live/index.m3u8?_HLS_skip=v2")
        #expect(DeliveryDirectives().url(for: plain) == plain)
        #expect(DeliveryDirectives(partIndex: 1).url(for: plain) == nil, "_HLS_part needs _HLS_msn")
        // Relative playlist URLs stay relative.
        let relative = try #require(URL(string: "low/index.m3u8?k=1"))
        #expect(DeliveryDirectives(mediaSequenceNumber: 5).url(for: relative)?.relativeString == "low/index.m3u8?k=1&_HLS_msn=5")
    }

    @Test(arguments: [DeliveryDirectives(), DeliveryDirectives(mediaSequenceNumber: 0), DeliveryDirectives(mediaSequenceNumber: 273, partIndex: 2),
                      DeliveryDirectives(mediaSequenceNumber: 9, partIndex: 0, skip: .segmentsAndDateRanges), DeliveryDirectives(skip: .segments)])
    func aServerReadsWhatAClientWrites(_ directives: DeliveryDirectives) throws {
        let base = try #require(URL(string: "https://example.com/a.m3u8?x=%26y"))
        let url = try #require(directives.url(for: base))
        #expect(try DeliveryDirectives(url: url) == directives)
    }

    @Test func aServerReadsAQueryString() throws {
        #expect(try DeliveryDirectives(query: "_HLS_msn=273&_HLS_part=2") == DeliveryDirectives(mediaSequenceNumber: 273, partIndex: 2))
        #expect(try DeliveryDirectives(query: "token=1&_HLS_skip=YES&_HLS_future=7&x") == DeliveryDirectives(skip: .segments),
                "other parameters, and _HLS_ ones this version does not know, are ignored")
        #expect(try DeliveryDirectives(query: "a=b c\"<>&_HLS_msn=%31%32&%zz=1") == DeliveryDirectives(mediaSequenceNumber: 12),
                "a query a URL would refuse is read, not trapped on (the fuzzer's find), and percent-decoded")
        #expect(try DeliveryDirectives(query: nil) == DeliveryDirectives())
        #expect(try DeliveryDirectives(query: "") == DeliveryDirectives())
    }

    @Test(arguments: [
        ("_HLS_part=2", DeliveryDirectivesError.partWithoutMediaSequenceNumber),
        ("_HLS_msn=-1", .invalidValue(name: "_HLS_msn", value: "-1")),
        ("_HLS_msn=1.5", .invalidValue(name: "_HLS_msn", value: "1.5")),
        ("_HLS_msn=", .invalidValue(name: "_HLS_msn", value: "")),
        ("_HLS_msn=99999999999999999999999", .invalidValue(name: "_HLS_msn", value: "99999999999999999999999")),
        ("_HLS_msn=3&_HLS_part=x", .invalidValue(name: "_HLS_part", value: "x")),
        ("_HLS_skip=yes", .invalidValue(name: "_HLS_skip", value: "yes")),
        ("_HLS_msn=3&_HLS_msn=4", .repeated("_HLS_msn")),
        ("_HLS_msn=%zz", .invalidValue(name: "_HLS_msn", value: "%zz")),
    ])
    func badRequests(_ query: String, _ error: DeliveryDirectivesError) {
        #expect(throws: error) { try DeliveryDirectives(query: query) }
    }

    @Test func aServerChecksARequestAgainstItsPlaylist() throws {
        let playlist = try parseMedia(LowLatencyExamples.spec)  // last segment 272, parts up to 273.2, PART-TARGET 0.33334
        #expect(try DeliveryDirectives(mediaSequenceNumber: 273, partIndex: 3).check(against: playlist) == DeliveryDirectives(mediaSequenceNumber: 273, partIndex: 3))
        #expect(try DeliveryDirectives(mediaSequenceNumber: 274).check(against: playlist).mediaSequenceNumber == 274, "last segment + 2")
        #expect(throws: DeliveryDirectivesError.tooFarAhead(requested: 275, last: 272)) {
            try DeliveryDirectives(mediaSequenceNumber: 275).check(against: playlist)
        }
        // The Advance Part Limit: 3 / 0.33334 ≈ 9 parts beyond the last one.
        #expect(try DeliveryDirectives(mediaSequenceNumber: 273, partIndex: 10).check(against: playlist).partIndex == 10)
        #expect(throws: DeliveryDirectivesError.self) { try DeliveryDirectives(mediaSequenceNumber: 273, partIndex: 11).check(against: playlist) }
        // CAN-SKIP-UNTIL without CAN-SKIP-DATERANGES: v2 is served as YES; without CAN-SKIP-UNTIL, no skip.
        #expect(try DeliveryDirectives(skip: .segmentsAndDateRanges).check(against: playlist) == DeliveryDirectives(skip: .segments))
        var noSkip = playlist
        noSkip.serverControl?.canSkipUntil = nil
        #expect(try DeliveryDirectives(skip: .segments).check(against: noSkip) == DeliveryDirectives())
        // With EXT-X-ENDLIST every directive is ignored.
        var ended = playlist
        ended.endList = true
        #expect(try DeliveryDirectives(mediaSequenceNumber: 999, partIndex: 9, skip: .segments).check(against: ended) == DeliveryDirectives())
    }

    @Test(arguments: [
        (272, nil, true), (273, nil, false), (200, nil, true),
        (273, 2, true), (273, 3, false), (274, 0, false),
        (272, 11, true), (272, 12, true),  // past the last part of 272: part 0 of 273, which exists
        (266, 0, true),  // segment 266 has no parts (any more): part 0 of 267, complete
        (265, 0, true),  // older than the playlist
    ] as [(Int, Int?, Bool)])
    func blockingEndsWhenThePlaylistHasThePart(msn: Int, part: Int?, satisfied: Bool) throws {
        let playlist = try parseMedia(LowLatencyExamples.spec)
        #expect(DeliveryDirectives(mediaSequenceNumber: msn, partIndex: part).isSatisfied(by: playlist) == satisfied)
    }
}
