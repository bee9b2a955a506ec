// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "livefilter",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LiveFilter", targets: ["LiveFilter"]),
        .executable(name: "livefilter", targets: ["livefilter"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // C bindings: module map + shim header only. No Swift API.
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavfilter-dev", "libswscale-dev",
                              "libswresample-dev", "libavutil-dev", "libx264-dev", "pkg-config"])]
        ),
        // FFmpeg's log callback needs C (va_list) and a little static state.
        .target(name: "CFFmpegLog", dependencies: ["CFFmpeg"]),
        // The only module that imports CFFmpeg: demux, decode, convert, encode, mux.
        .target(name: "MediaIO", dependencies: ["CFFmpeg", "CFFmpegLog", "Filters", "HLS"]),
        // Pure Swift HLS playlists: model, parser, serializer, linter, RFC 6381 codec strings. No FFmpeg.
        .target(name: "HLS"),
        // Pure Swift RGB filters and the chain grammar. No FFmpeg.
        .target(name: "Filters"),
        // Tick clock and frame-pull loop joining a source, a chain and a sink.
        .target(name: "Pipeline", dependencies: ["MediaIO", "Filters", "HLS"]),
        // One job split into shards across machines: the plan, a shard's part, the audio task, the
        // join, and submitting them to a cluster engine (Slurm) that schedules them.
        .target(name: "Shards", dependencies: ["Pipeline", "MediaIO", "HLS"]),
        // A small HTTP/1.1 server (POSIX sockets): `livefilter serve` and the HLS test servers.
        .target(name: "HTTPServer"),
        // One import for library users: re-exports Filters, MediaIO and Pipeline.
        .target(name: "LiveFilter", dependencies: ["Pipeline", "Filters", "MediaIO", "HLS", "Shards"]),
        .executableTarget(name: "livefilter", dependencies: [
            "Pipeline", "Shards", "Filters", "MediaIO", "HLS", "HTTPServer",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // libFuzzer targets (scripts/fuzz.sh); an ordinary build makes corpus replay tools of them.
        .target(name: "FuzzSupport"),
        .executableTarget(name: "FuzzChainGrammar", dependencies: ["Filters", "FuzzSupport"]),
        .executableTarget(name: "FuzzPlaylist", dependencies: ["HLS", "FuzzSupport"]),
        // Kernel benchmark: Swift filters against libavfilter/libswscale in one process (`make bench`).
        // Double-precision references and PSNR: the oracles of the filter tests and the bench.
        .target(name: "FilterReferences", dependencies: ["Filters"]),
        .executableTarget(name: "livefilter-bench", dependencies: ["Filters", "FilterReferences", "MediaIO", "CFFmpeg"]),
        .testTarget(name: "FiltersTests", dependencies: ["Filters", "FilterReferences", "CFFmpeg"]),
        .testTarget(name: "PipelineTests", dependencies: ["LiveFilter", "Pipeline", "Filters", "MediaIO", "HTTPServer", "CFFmpeg"]),
        .testTarget(name: "EndToEndTests", dependencies: ["MediaIO", "HTTPServer"]),
        .testTarget(name: "HLSTests", dependencies: ["HLS", "MediaIO", "Filters"]),
    ]
)
