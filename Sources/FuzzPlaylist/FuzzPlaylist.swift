import FuzzSupport
import HLS
#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer target for the HLS playlist parser and linter: any text parses or throws a
/// `PlaylistParseError`, and every linter profile returns a report (never traps). A media playlist
/// that parses also renders exactly (`render(durations: .exact)`) to text that parses and renders
/// to the same text; merging it as a delta update and judging Delivery Directives against it
/// return or throw, never trap.
///
/// Built with `-Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING` (see scripts/fuzz.sh), `main` hands over to
/// libFuzzer's driver. In an ordinary build this is a replay tool: `FuzzPlaylist FILE…` runs each file once.
func fuzzPlaylist(_ bytes: UnsafeRawBufferPointer) {
    let text = String(decoding: bytes, as: UTF8.self)
    if case let .media(playlist)? = try? PlaylistParser.parse(text) {
        checkMedia(playlist)
    }
    _ = try? DeliveryDirectives(query: text)
    for profile in HLSLinter.Profile.allCases {
        let report = HLSLinter(profile: profile).lint(text)
        _ = report.violations.map(\.description)
    }
}

func checkMedia(_ playlist: MediaPlaylist) {
    let rendered = playlist.render(durations: .exact)
    guard case let .media(again)? = try? PlaylistParser.parse(rendered) else {
        fatalError("the exact rendering of a parsed playlist does not parse:\n\(rendered)")
    }
    let twice = again.render(durations: .exact)
    if twice != rendered { fatalError("rendering is not stable:\n\(rendered)\n---\n\(twice)") }
    var previous = playlist
    previous.skip = nil
    _ = try? previous.applying(delta: playlist)
    let next = playlist.nextMediaSequenceNumber
    for msn in [next - 2, next - 1, next, next + 1, next + 2, 0, Int.max] {
        for part in [nil, 0, 3, Int.max] as [Int?] {
            let directives = DeliveryDirectives(mediaSequenceNumber: msn, partIndex: part, skip: .segmentsAndDateRanges)
            _ = try? directives.check(against: playlist)
            _ = directives.isSatisfied(by: playlist)
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func LLVMFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzPlaylist(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
    return 0
}

@main
struct ReplayPlaylist {
    static func main() {
        #if FUZZING
        exit(runLibFuzzer(LLVMFuzzerTestOneInput))
        #else
        replay(CommandLine.arguments.dropFirst(), fuzzPlaylist)
        #endif
    }
}
