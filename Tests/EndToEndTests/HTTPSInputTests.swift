import Foundation
import Testing

/// The HLS input's HTTP stack against an origin nobody here wrote: nghttpd (nghttp2's HTTP/2
/// server) over TLS with a certificate of the test's own CA. The reader must speak HTTP/2 (ALPN),
/// keep one connection for the playlist and every segment, and verify the certificate: trusted
/// through `SSL_CERT_FILE` (OpenSSL's convention), refused without it.
extension EndToEnd {
    @Suite("HTTPS input")
    struct HTTPSInputTests {
        /// A self-signed certificate for localhost and 127.0.0.1, and its key.
        static func certificate(in sandbox: Sandbox) async throws -> (key: URL, certificate: URL) {
            let key = sandbox.file("key.pem"), certificate = sandbox.file("cert.pem")
            let made = try await Subprocess.run(Paths.tool("openssl"), [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key.path, "-out", certificate.path,
                "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-days", "1"])
            try #require(made.succeeded, "openssl: \(made.summary)")
            return (key, certificate)
        }

        /// Waits until something accepts connections on `port` (nghttpd says nothing when ready).
        static func waitForListener(on port: Int, within seconds: Double = 10) async throws {
            let until = Date().addingTimeInterval(seconds)
            while Date() < until {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = in_port_t(UInt16(port).bigEndian)
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
                }
                close(fd)
                if connected { return }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw ToolFailure("nothing listens on port \(port) after \(seconds) s")
        }

        @Test("HLS input over HTTPS: HTTP/2, the playlist and every segment on one kept-alive connection, the certificate verified")
        func http2() async throws {
            let sandbox = try Sandbox("https-in")
            defer { sandbox.remove() }
            try await SyntheticHLS.make(SyntheticHLS.Clip(), .ts, in: sandbox.file("site/media"))
            let (key, certificate) = try await Self.certificate(in: sandbox)
            let port = try EndToEnd.ChannelTests.freePort()
            let server = try Subprocess(Paths.tool("nghttpd"), ["-v", "-d", sandbox.file("site").path, "\(port)", key.path, certificate.path])
            try await Self.waitForListener(on: port)
            let input = "https://localhost:\(port)/media/index.m3u8"

            // Not trusted: the run ends with a clear error, having fetched nothing.
            let untrusted = try await LiveFilter.run(["run", input, "-o", sandbox.file("untrusted.mp4").path, "--quiet"], timeout: .seconds(60))
            print("untrusted: exit \(untrusted.status): \(untrusted.stderrText)")
            #expect(untrusted.exitedNormally && untrusted.status != 0 && !untrusted.timedOut, "\(untrusted.summary)")
            #expect(untrusted.stderrText.lowercased().contains("certificate"), "the error says why: \(untrusted.stderrText)")

            let output = sandbox.file("out.mp4")
            let result = try await LiveFilter.run(["run", input, "-o", output.path, "--quiet"], timeout: .seconds(120),
                                                  environment: ["SSL_CERT_FILE": certificate.path])
            server.send(SIGTERM)
            let log = await server.wait(timeout: .seconds(10)).stdoutText.split(separator: "\n")
            try LiveFilter.requireSuccess(result)
            let timeline = try await OutputTimeline.measure(output)
            timeline.expectWhole(frames: 120)

            // The connections that carried requests (a refused handshake carries none).
            let requests = log.filter { $0.hasPrefix("[id=") && $0.contains(":path: ") }
            let connections = Set(requests.compactMap { line in line.firstIndex(of: "]").map { line[..<$0] } })
            let paths = requests.map { $0.split(separator: " ").last.map(String.init) ?? "" }
            print("nghttpd: \(connections.count) connection(s) with requests; requests: \(paths.joined(separator: " "))")
            #expect(connections.count == 1, "one connection for the whole run: \(connections.sorted())")
            #expect(paths.count == 1 + 4 && Set(paths).count == 5, "the playlist and its 4 segments, each once: \(paths)")
            let trusted = requests
            // HTTP/2 streams: a new odd stream id per request, all on that one connection.
            #expect(trusted.allSatisfy { $0.contains("(stream_id=") }, "\(trusted)")
        }
    }
}
