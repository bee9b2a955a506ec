import Foundation
import HLS
import HLSClient
import Testing

/// Numbers an origin writes are bounded where they are parsed (`PlaylistNumber`): an out-of-range
/// value is a named error that says which tag and which bound, never a trap later.
@Suite("Hostile playlists: numbers bounded where they are parsed")
struct HostilePlaylistTests {
    static func media(_ body: String, header: String = "#EXT-X-TARGETDURATION:2") -> String {
        "#EXTM3U\n\(header)\n\(body)\n"
    }

    @Test("decimal-integer: digits only, at most 2^53 − 1",
          arguments: [("0", PlaylistNumber.Reading.value(0)), ("9007199254740991", .value(9_007_199_254_740_991)),
                      ("9007199254740992", .tooLarge), ("9223372036854775807", .tooLarge), ("18446744073709551615", .tooLarge),
                      ("99999999999999999999", .tooLarge), ("999999999999999999999", .notDecimalInteger), ("-1", .notDecimalInteger),
                      ("+5", .notDecimalInteger), (" 5", .notDecimalInteger), ("5.0", .notDecimalInteger), ("", .notDecimalInteger),
                      ("٣", .notDecimalInteger)])
    func decimalInteger(text: String, expected: PlaylistNumber.Reading) {
        #expect(PlaylistNumber.decimalInteger(text) == expected)
    }

    @Test("a tag number beyond the bound is refused by name (out of bounds), not trapped on later",
          arguments: [
              ("#EXT-X-DISCONTINUITY-SEQUENCE:9223372036854775807\n#EXT-X-DISCONTINUITY\n#EXTINF:1,\na.ts", "EXT-X-DISCONTINUITY-SEQUENCE"),
              ("#EXT-X-MEDIA-SEQUENCE:9223372036854775807\n#EXTINF:1,\na.ts", "EXT-X-MEDIA-SEQUENCE"),
              ("#EXT-X-MEDIA-SEQUENCE:9007199254740990\n#EXTINF:1,\na.ts\n#EXTINF:1,\nb.ts", "EXT-X-MEDIA-SEQUENCE"),
              ("#EXTINF:1e300,\na.ts", "EXTINF"),
              ("#EXTINF:1000001,\na.ts", "EXTINF"),
          ])
    func outOfBounds(body: String, tag: String) throws {
        let error = try #require(throws: PlaylistParseError.self) { try PlaylistParser.parse(Self.media(body)) }
        #expect(error.isOutOfBounds, "\(error)")
        #expect(error.message.contains(tag), "\(error)")
        #expect(HLSInputError(parsing: error, url: "http://o/x.m3u8").description.contains("is refused"))
    }

    @Test("a target duration beyond the bound is refused")
    func hugeTarget() throws {
        let error = try #require(throws: PlaylistParseError.self) {
            try PlaylistParser.parse(Self.media("#EXTINF:1,\na.ts", header: "#EXT-X-TARGETDURATION:9223372036854775807"))
        }
        #expect(error.isOutOfBounds)
    }

    @Test("malformed numbers are errors that say so (not out of bounds)",
          arguments: ["#EXT-X-DISCONTINUITY-SEQUENCE:-1\n#EXTINF:1,\na.ts", "#EXT-X-DISCONTINUITY-SEQUENCE:x\n#EXTINF:1,\na.ts",
                      "#EXT-X-MEDIA-SEQUENCE:+3\n#EXTINF:1,\na.ts", "#EXTINF:-5,\na.ts", "#EXTINF:nan,\na.ts", "#EXTINF:inf,\na.ts",
                      "#EXT-X-PART:DURATION=-1,URI=\"p.ts\"\n#EXTINF:1,\na.ts"])
    func malformed(body: String) throws {
        let error = try #require(throws: PlaylistParseError.self) { try PlaylistParser.parse(Self.media(body)) }
        #expect(!error.isOutOfBounds, "\(error)")
    }

    @Test("byte ranges: an offset or a length near Int64.max, or a chain of ranges past 2^53, is refused",
          arguments: ["#EXT-X-BYTERANGE:9223372036854775807@9223372036854775807\n#EXTINF:1,\na.ts",
                      "#EXT-X-BYTERANGE:100@9007199254740990\n#EXTINF:1,\na.ts",
                      "#EXT-X-BYTERANGE:4503599627370496@0\n#EXTINF:1,\na.ts\n#EXT-X-BYTERANGE:4503599627370496\n#EXTINF:1,\na.ts\n#EXT-X-BYTERANGE:10\n#EXTINF:1,\na.ts",
                      "#EXT-X-MAP:URI=\"i.mp4\",BYTERANGE=\"9223372036854775807@1\"\n#EXTINF:1,\na.ts"])
    func byteRanges(body: String) throws {
        let error = try #require(throws: PlaylistParseError.self) { try PlaylistParser.parse(Self.media(body)) }
        #expect(error.isOutOfBounds, "\(error)")
    }

    @Test("a preload hint with a negative or huge length, a rendition report beyond the bound: left out, the playlist kept")
    func hints() throws {
        let text = Self.media("""
            #EXT-X-PART-INF:PART-TARGET=0.5
            #EXTINF:1,
            a.ts
            #EXT-X-PRELOAD-HINT:TYPE=PART,URI="p.ts",BYTERANGE-START=0,BYTERANGE-LENGTH=-5
            #EXT-X-PRELOAD-HINT:TYPE=PART,URI="q.ts",BYTERANGE-START=9007199254740990,BYTERANGE-LENGTH=100
            #EXT-X-RENDITION-REPORT:URI="r.m3u8",LAST-MSN=9223372036854775807,LAST-PART=1
            """)
        guard case let .media(playlist) = try PlaylistParser.parse(text) else { Issue.record("not a media playlist"); return }
        #expect(playlist.preloadHints.isEmpty)
        #expect(playlist.renditionReports.isEmpty)
        #expect(playlist.segments.count == 1)
    }

    @Test("a master: BANDWIDTH beyond the bound is an error; a RESOLUTION whose area would overflow, a FRAME-RATE of inf: left out")
    func master() throws {
        #expect(throws: PlaylistParseError.self) {
            try PlaylistParser.parse("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=9223372036854775807\nv.m3u8\n")
        }
        let text = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000,RESOLUTION=4294967296x4294967296,FRAME-RATE=inf\nv.m3u8\n"
        guard case let .master(master) = try PlaylistParser.parse(text) else { Issue.record("not a master"); return }
        #expect(master.variants.first?.resolution == nil)
        #expect(master.variants.first?.frameRate == nil)
    }

    @Test("the largest values accepted still add up without overflow")
    func largestAccepted() throws {
        let text = Self.media("""
            #EXT-X-MEDIA-SEQUENCE:9007199254740980
            #EXT-X-DISCONTINUITY-SEQUENCE:9007199254740991
            #EXT-X-DISCONTINUITY
            #EXTINF:1000000,
            a.ts
            #EXT-X-DISCONTINUITY
            #EXTINF:1000000,
            b.ts
            """, header: "#EXT-X-TARGETDURATION:1000000")
        guard case let .media(playlist) = try PlaylistParser.parse(text) else { Issue.record("not a media playlist"); return }
        #expect(playlist.discontinuitySequenceNumber(ofSegmentAt: 1) == 9_007_199_254_740_993)
        #expect(playlist.nextMediaSequenceNumber == 9_007_199_254_740_982)
    }
}

@Suite("Where a remote playlist's references may lead")
struct NetworkAccessTests {
    @Test("public and non-public addresses (RFC 6890)", arguments: [
        ("8.8.8.8", true), ("1.1.1.1", true), ("2606:4700::1111", true), ("::ffff:8.8.8.8", true),
        ("127.0.0.1", false), ("127.255.0.9", false), ("0.0.0.0", false), ("10.1.2.3", false), ("172.16.0.1", false),
        ("172.31.255.255", false), ("192.168.1.1", false), ("169.254.169.254", false), ("100.64.0.1", false),
        ("224.0.0.1", false), ("255.255.255.255", false), ("192.0.2.1", false), ("::1", false), ("::", false),
        ("fe80::1", false), ("fd00::1", false), ("fc00::1", false), ("::ffff:127.0.0.1", false), ("::ffff:169.254.169.254", false),
        ("64:ff9b::a9fe:a9fe", false), ("ff02::1", false), ("[::1]", false), ("172.32.0.1", true), ("11.0.0.1", true),
    ])
    func scope(address: String, isPublic: Bool) throws {
        let parsed = try #require(IPAddress(address))
        #expect(parsed.isPublic == isPublic, "\(address)")
    }

    @Test("a playlist from the network may not name local files, data: or other schemes, nor a private host when private networks are off")
    func refusals() async throws {
        let fetcher = ResourceFetcher(ioTimeout: .seconds(2), maxRedirects: 2, access: NetworkAccess(localFiles: false, privateNetworks: false))
        for text in ["file:///etc/hostname", "/etc/hostname", "data:text/plain,hi", "ftp://example.com/a", "http://127.0.0.1:9/x.m3u8",
                     "http://169.254.169.254/latest/meta-data/", "http://[::1]/x", "http://localhost/x", "http://10.0.0.1/x"] {
            let url = try #require(URL(string: text))
            await #expect(throws: FetchError.self, "\(text)") { try await fetcher.check(url) }
        }
        let open = ResourceFetcher(ioTimeout: .seconds(2), maxRedirects: 2, access: NetworkAccess(localFiles: false, privateNetworks: true))
        let loopback = try #require(URL(string: "http://127.0.0.1:9/x.m3u8")), local = try #require(URL(string: "file:///etc/hostname"))
        try await open.check(loopback)
        await #expect(throws: FetchError.self) { try await open.check(local) }
    }

    @Test("an input decides the default: a loopback or local input may reach private addresses; an explicit choice wins")
    func defaults() async throws {
        let loopback = try #require(URL(string: "http://127.0.0.1:8080/x.m3u8"))
        let publicInput = try #require(URL(string: "http://8.8.8.8/x.m3u8"))
        #expect(await NetworkAccess.forInput(loopback, allowPrivateNetworks: nil) == NetworkAccess(localFiles: false, privateNetworks: true))
        #expect(await NetworkAccess.forInput(publicInput, allowPrivateNetworks: nil) == NetworkAccess(localFiles: false, privateNetworks: false))
        #expect(await NetworkAccess.forInput(loopback, allowPrivateNetworks: false) == NetworkAccess(localFiles: false, privateNetworks: false))
        #expect(await NetworkAccess.forInput(URL(fileURLWithPath: "/tmp/x.m3u8"), allowPrivateNetworks: nil).localFiles)
    }

    @Test("the address a request is sent to is checked again: a name that resolved to a public address at the check and to a private one at the connection is cut before the request")
    func connectedAddress() async throws {
        // A listener that never answers: the connection completes (the kernel's backlog), the request must not be sent.
        let (fd, port) = Loopback.port(listening: true)
        defer { close(fd) }
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/x.m3u8"))
        // `checked: false` skips the name's check, as a rebinding name would pass it: the connection's check remains.
        let fetcher = ResourceFetcher(ioTimeout: .seconds(5), maxRedirects: 0, access: NetworkAccess(localFiles: false, privateNetworks: false))
        let started = ContinuousClock.now
        let error = await #expect(throws: FetchError.self) { _ = try await fetcher.data(url, maxBytes: 1 << 20, checked: false) }
        #expect(error.map { if case .refused = $0.kind { true } else { false } } == true, "\(String(describing: error))")
        #expect(error?.description.contains("127.0.0.1") == true, "\(String(describing: error))")
        #expect(ContinuousClock.now - started < .seconds(2), "refused at the connection, not after the idle timeout")
        // Allowed, the same request goes out and waits for the answer that never comes: the idle timeout.
        let open = ResourceFetcher(ioTimeout: .milliseconds(300), maxRedirects: 0, access: NetworkAccess(localFiles: false, privateNetworks: true))
        let timedOut = await #expect(throws: FetchError.self) { _ = try await open.data(url, maxBytes: 1 << 20, checked: false) }
        #expect(timedOut.map { if case .timedOut = $0.kind { true } else { false } } == true, "\(String(describing: timedOut))")
    }

    @Test("a local FIFO or device is refused at once, not read for ever")
    func fifo() async throws {
        let path = NSTemporaryDirectory() + "lf-fifo-\(getpid())"
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        let fetcher = ResourceFetcher(ioTimeout: .seconds(2), maxRedirects: 0, access: NetworkAccess(localFiles: true, privateNetworks: true))
        let started = ContinuousClock.now
        for target in [path, "/dev/zero"] {
            let error = await #expect(throws: FetchError.self) { _ = try await fetcher.data(URL(fileURLWithPath: target), maxBytes: 1 << 20) }
            #expect(error.map { if case .refused = $0.kind { true } else { false } } == true, "\(String(describing: error))")
        }
        #expect(ContinuousClock.now - started < .seconds(1))
    }
}
