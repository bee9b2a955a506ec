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
        // The only module that imports CFFmpeg: demux, decode, convert, encode, mux.
        .target(name: "MediaIO", dependencies: ["CFFmpeg", "Filters"]),
        // Pure Swift RGB filters and the chain grammar. No FFmpeg.
        .target(name: "Filters"),
        // Tick clock and frame-pull loop joining a source, a chain and a sink.
        .target(name: "Pipeline", dependencies: ["MediaIO", "Filters"]),
        // A small HTTP/1.1 server (POSIX sockets): `livefilter serve` and the HLS test servers.
        .target(name: "HTTPServer"),
        // One import for library users: re-exports Filters, MediaIO and Pipeline.
        .target(name: "LiveFilter", dependencies: ["Pipeline", "Filters", "MediaIO"]),
        .executableTarget(name: "livefilter", dependencies: [
            "Pipeline", "Filters", "MediaIO", "HTTPServer",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // Kernel benchmark: Swift filters against libavfilter/libswscale in one process (`make bench`).
        .executableTarget(name: "livefilter-bench", dependencies: ["Filters", "MediaIO", "CFFmpeg"]),
        .testTarget(name: "FiltersTests", dependencies: ["Filters", "CFFmpeg"]),
        .testTarget(name: "PipelineTests", dependencies: ["LiveFilter", "Pipeline", "Filters", "MediaIO", "HTTPServer"]),
        .testTarget(name: "EndToEndTests", dependencies: ["MediaIO", "HTTPServer"]),
    ]
)
