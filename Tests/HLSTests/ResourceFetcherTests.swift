import Foundation
import HLS
import HLSClient
import Synchronization
import Testing

/// The fetcher's HTTP (libcurl through `CurlEngine`) against Python's http.server, a server nobody
/// here wrote: whole bodies and byte ranges arrive intact when the reader is slower than the
/// network (the transfer pauses a megabyte ahead and resumes), transfers in parallel share the
/// engine, and a cancelled fetch ends at once.
@Suite("ResourceFetcher over HTTP")
struct ResourceFetcherTests {
    /// `python3 -m http.server` serving `folder` on a free loopback port; stopped by `stop()`.
    final class PythonServer: @unchecked Sendable {
        let process = Process()
        let port: Int
        init(folder: String) throws {
            // The kernel picks the port (bound, read, closed); the server binds it right after.
            port = Loopback.port(listening: false).port
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", folder, "\(port)"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
        }
        func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)/\(path)")! }
        /// SIGKILL: the test process's children inherit a blocked SIGTERM.
        func stop() { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
    }

    static func waitUntilServing(_ fetcher: ResourceFetcher, _ url: URL) async throws {
        for _ in 0..<100 {
            if (try? await fetcher.data(url, maxBytes: 1 << 20)) != nil { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw FFmpegPlaylistTests.ToolError.failed("python3 -m http.server did not answer")
    }

    @Test("a slow reader gets every byte in order (the transfer pauses and resumes), whole and in ranges, four at a time")
    func slowReader() async throws {
        let folder = try ScratchFolder("fetcher")
        defer { folder.remove() }
        // 24 MiB of a pattern whose every 8-byte word says its offset: a byte out of place shows.
        var body = [UInt8](repeating: 0, count: 24 << 20)
        body.withUnsafeMutableBytes { raw in
            for i in 0..<(raw.count / 8) { raw.storeBytes(of: UInt64(i * 8).bigEndian, toByteOffset: i * 8, as: UInt64.self) }
        }
        try Data(body).write(to: URL(fileURLWithPath: folder.path + "/big.bin"))
        let expected = body
        try Data("ok".utf8).write(to: URL(fileURLWithPath: folder.path + "/ping"))
        let server = try PythonServer(folder: folder.path)
        defer { server.stop() }
        let fetcher = ResourceFetcher(ioTimeout: .seconds(5), maxRedirects: 0, access: NetworkAccess(localFiles: false, privateNetworks: true))
        try await Self.waitUntilServing(fetcher, server.url("ping"))

        let ranges: [ByteRange?] = [nil, ByteRange(length: 5 << 20, offset: 3), ByteRange(length: 1_000_001, offset: 20 << 20), nil]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for range in ranges {
                group.addTask {
                    let received = Mutex([UInt8]())
                    _ = try await fetcher.stream(server.url("big.bin"), range: range) { chunk in
                        // Slower than loopback: about 1 ms per chunk of at most 16 KiB.
                        try await Task.sleep(for: .milliseconds(1))
                        received.withLock { $0.append(contentsOf: chunk.readableBytesView) }
                    }
                    let offset = range?.offset ?? 0, length = range?.length ?? expected.count
                    let got = received.withLock { $0 }
                    #expect(got.count == length, "\(String(describing: range))")
                    #expect(got.elementsEqual(expected[offset..<offset + length]), "\(String(describing: range)): bytes out of place")
                }
            }
            try await group.waitForAll()
        }
    }

    @Test("a cancelled fetch ends at once, and the engine goes on serving the next")
    func cancelled() async throws {
        let folder = try ScratchFolder("fetcher-cancel")
        defer { folder.remove() }
        try Data(repeating: 7, count: 16 << 20).write(to: URL(fileURLWithPath: folder.path + "/big.bin"))
        try Data("ok".utf8).write(to: URL(fileURLWithPath: folder.path + "/ping"))
        let server = try PythonServer(folder: folder.path)
        defer { server.stop() }
        let fetcher = ResourceFetcher(ioTimeout: .seconds(5), maxRedirects: 0, access: NetworkAccess(localFiles: false, privateNetworks: true))
        try await Self.waitUntilServing(fetcher, server.url("ping"))
        let task = Task {
            try await fetcher.stream(server.url("big.bin")) { _ in try await Task.sleep(for: .milliseconds(20)) }
        }
        try await Task.sleep(for: .milliseconds(200))
        let cancelled = ContinuousClock.now
        task.cancel()
        _ = await task.result
        #expect(ContinuousClock.now - cancelled < .milliseconds(200), "the fetch ended \(ContinuousClock.now - cancelled) after its cancel")
        let (bytes, _) = try await fetcher.data(server.url("ping"), maxBytes: 16)
        #expect(bytes == Array("ok".utf8))
    }
}
