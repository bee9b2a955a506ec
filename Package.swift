// swift-tools-version:6.2
import Foundation
import PackageDescription

/// The kernels' vector unit, chosen like `-march=native`: AVX2 + FMA (LLVM's "haswell") when the
/// machine that builds has every feature that CPU model assumes, else the x86-64 baseline (SSE2).
/// `LIVEFILTER_PORTABLE=1` forces the baseline, for a binary to copy to other machines.
///
/// Why a build setting and not runtime dispatch: Swift has no per-function target attribute, so two
/// kernel sets need two modules built with different `-target-cpu`, and the linker then keeps ONE
/// copy of each generic specialisation both emit (weak hidden symbols): an AVX2 copy of, say, a
/// sort may end up in the baseline path (seen here, BENCHMARKS.md, "Portable (SSE2) and AVX2 builds"). A per-module setting is the one
/// SwiftPM honours for dependencies too: since tools version 6.2 it no longer refuses unsafeFlags
/// in a dependency, so a package that depends on LiveFilter by URL and version gets the same kernels.
let kernelSettings: [SwiftSetting] = {
    let environment = ProcessInfo.processInfo.environment
    guard environment["LIVEFILTER_PORTABLE"] != "1",
          let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
          let line = info.split(separator: "\n").first(where: { $0.hasPrefix("flags") }) else { return [] }
    let flags = Set(line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == ":" }).map(String.init))
    let haswell = ["avx", "avx2", "fma", "bmi1", "bmi2", "f16c", "movbe", "abm", "popcnt", "sse4_2", "ssse3", "xsave"]
    guard haswell.allSatisfy(flags.contains) else { return [] }
    return [.unsafeFlags(["-target-cpu", "haswell"], .when(platforms: [.linux])),
            .define("LIVEFILTER_AVX2", .when(platforms: [.linux]))]
}()

/// `scripts/fuzz.sh` builds the libFuzzer targets with `LIVEFILTER_FUZZ=1`: coverage and
/// AddressSanitizer on our own modules under test (Filters, HLS, HLSClient) and the fuzz targets,
/// not on their dependencies, so the sanitizer build reuses the SwiftNIO the ordinary build made
/// instead of compiling it again.
let fuzzing = ProcessInfo.processInfo.environment["LIVEFILTER_FUZZ"] == "1"
let instrumented: [SwiftSetting] = fuzzing ? [.unsafeFlags(["-sanitize=fuzzer,address"])] : []
// FUZZING drops the replay tool's @main: libFuzzer's driver is the program's main.
let fuzzEntry: [SwiftSetting] = fuzzing ? [.unsafeFlags(["-sanitize=fuzzer,address", "-parse-as-library"]), .define("FUZZING")] : []
let fuzzLink: [LinkerSetting] = fuzzing ? [.unsafeFlags(["-sanitize=fuzzer,address"])] : []

let package = Package(
    name: "livefilter",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LiveFilter", targets: ["LiveFilter"]),
        .executable(name: "livefilter", targets: ["livefilter"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // HTTP: serve, run --serve, the live control port and the tests' servers.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0", traits: ["FullFoundation"]),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.0"),
        // Already in Hummingbird's graph; named for the connection guard's channel handler.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.8.0"),
    ],
    targets: [
        // C bindings: module map + shim header only. No Swift API.
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavfilter-dev", "libswscale-dev",
                              "libswresample-dev", "libavutil-dev", "libx264-dev", "pkg-config"])]
        ),
        // FreeType (the text filter's glyphs) and libpng (the overlay filter's images).
        .systemLibrary(name: "CFreeType", pkgConfig: "freetype2", providers: [.apt(["libfreetype-dev"])]),
        .systemLibrary(name: "CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        // libsrt, directly: a channel's SRT listener keeps its port and takes a returning publisher at
        // once (FFmpeg's `srt` protocol accepts one caller per open). FFmpeg links the same library.
        .systemLibrary(name: "CSRT", pkgConfig: "srt", providers: [.apt(["libsrt-gnutls-dev"])]),
        // libcurl, the HLS input's HTTP (HLSClient): HTTPS, HTTP/2 (nghttp2) and keep-alive from the
        // system's library, where AsyncHTTPClient's graph (NIOSSL's BoringSSL, HTTP/2, …) doubled the first build.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // FFmpeg's log callback needs C (va_list) and a little static state.
        .target(name: "CFFmpegLog", dependencies: ["CFFmpeg"]),
        // The only module that imports CFFmpeg: demux, decode, convert, encode, mux.
        .target(name: "MediaIO", dependencies: [
            "CFFmpeg", "CFFmpegLog", "CSRT", "Filters", "HLS", "HLSClient", "Broadcast", .product(name: "Logging", package: "swift-log"),
        ]),
        // Our HLS client: playlists on time (RFC 8216 §6.3.4, blocking reload, LL-HLS parts), segment
        // bytes fetched with retries into a feed that MediaIO's demuxer reads. No FFmpeg.
        .target(name: "HLSClient", dependencies: [
            "HLS",
            "CCurl",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "Metrics", package: "swift-metrics"),
        ], swiftSettings: instrumented),
        // What a broadcast carries beside its pictures, carried through the filter: SCTE-35 splice
        // information (read, checked, re-timed, written). Pure Swift, no FFmpeg.
        .target(name: "Broadcast"),
        // Pure Swift HLS playlists: model, parser, serializer, linter, RFC 6381 codec strings. No FFmpeg.
        .target(name: "HLS", swiftSettings: instrumented),
        // Pure Swift RGB filters and the chain grammar. No FFmpeg.
        .target(name: "Filters", dependencies: ["CCPUFeatures", "CFreeType", "CPNG"], swiftSettings: kernelSettings + instrumented),
        // One C function, built for the baseline CPU: whether this CPU runs the AVX2 kernels (CPUID);
        // and `static inline` wrappers for what Swift has no spelling for (prefetch hints, streamed
        // stores, the byte-pair multiply-add), compiled into the kernels that call them.
        .target(name: "CCPUFeatures"),
        // Tick clock and frame-pull loop joining a source, a chain and a sink.
        .target(name: "Pipeline", dependencies: [
            "MediaIO", "Filters", "HLS", "Broadcast",
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // One job split into shards across machines: the plan, a shard's part, the audio task, the
        // join, and submitting them to a cluster engine (Slurm) that schedules them.
        .target(name: "Shards", dependencies: ["Pipeline", "MediaIO", "HLS", .product(name: "Logging", package: "swift-log")]),
        // The HTTP side, on Hummingbird: static files for players (ranges, conditional requests,
        // HLS cache rules), Low-Latency HLS (blocking reload, delta updates, hinted parts held until
        // published), the player page, /metrics and /status, connection and header limits.
        .target(name: "Serving", dependencies: [
            "HLS",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "CoreMetrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // One import for library users: re-exports Filters, MediaIO and Pipeline.
        .target(name: "LiveFilter", dependencies: ["Pipeline", "Filters", "MediaIO", "HLS", "Shards"]),
        .executableTarget(name: "livefilter", dependencies: [
            "Pipeline", "Shards", "Filters", "MediaIO", "HLS", "Serving",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // libFuzzer targets (scripts/fuzz.sh); an ordinary build makes corpus replay tools of them.
        .target(name: "FuzzSupport", swiftSettings: instrumented + (fuzzing ? [.define("FUZZING")] : [])),
        .executableTarget(name: "FuzzChainGrammar", dependencies: ["Filters", "FuzzSupport"], swiftSettings: fuzzEntry, linkerSettings: fuzzLink),
        .executableTarget(name: "FuzzPlaylist", dependencies: ["HLS", "FuzzSupport"], swiftSettings: fuzzEntry, linkerSettings: fuzzLink),
        // The HLS reader against a loopback origin (NIO's HTTP server, already in Hummingbird's graph)
        // answering from the input; `hls.dict` (libFuzzer's dictionary) and `lsan.supp` are scripts/fuzz.sh's.
        .executableTarget(name: "FuzzHLSReader", dependencies: [
            "HLSClient", "HLS", "FuzzSupport",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ], exclude: ["hls.dict", "lsan.supp"], swiftSettings: fuzzEntry, linkerSettings: fuzzLink),
        // Kernel benchmark: Swift filters against libavfilter/libswscale in one process (`make bench`).
        // Double-precision references and PSNR: the oracles of the filter tests and the bench.
        .target(name: "FilterReferences", dependencies: ["Filters"]),
        .executableTarget(name: "livefilter-bench", dependencies: ["Filters", "FilterReferences", "MediaIO", "CFFmpeg"]),
        .testTarget(name: "FiltersTests", dependencies: ["Filters", "FilterReferences", "CFFmpeg"]),
        .testTarget(name: "PipelineTests", dependencies: [
            "LiveFilter", "Pipeline", "Filters", "MediaIO", "Serving", "CFFmpeg", "Broadcast",
            // The HTTP side's hostile-client tests speak raw HTTP to HTTPService.
            .product(name: "Hummingbird", package: "hummingbird"), .product(name: "NIOCore", package: "swift-nio"),
        ]),
        .testTarget(name: "EndToEndTests", dependencies: ["MediaIO", "Serving", "HLS", "Broadcast", .product(name: "Hummingbird", package: "hummingbird")]),
        .testTarget(name: "BroadcastTests", dependencies: ["Broadcast"]),
        .testTarget(name: "HLSTests", dependencies: ["HLS", "HLSClient", "MediaIO", "Filters", "Broadcast"]),
    ]
)
