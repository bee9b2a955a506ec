import FuzzSupport
import HLS
#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer target for the HLS playlist parser and linter: any text parses or throws a
/// `PlaylistParseError`, and every linter profile returns a report (never traps).
///
/// Built with `-Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING` (see scripts/fuzz.sh), `main` hands over to
/// libFuzzer's driver. In an ordinary build this is a replay tool: `FuzzPlaylist FILE…` runs each file once.
func fuzzPlaylist(_ bytes: UnsafeRawBufferPointer) {
    let text = String(decoding: bytes, as: UTF8.self)
    _ = try? PlaylistParser.parse(text)
    for profile in HLSLinter.Profile.allCases {
        let report = HLSLinter(profile: profile).lint(text)
        _ = report.violations.map(\.description)
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
