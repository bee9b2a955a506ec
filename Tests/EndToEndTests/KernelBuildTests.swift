import Foundation
import Testing

extension EndToEnd {
    /// The kernels are built for the building machine's CPU (Package.swift); the binary must say so
    /// on a CPU without AVX2 rather than die on an illegal instruction. qemu-user emulates one.
    @Suite("Kernel build")
    struct KernelBuildCheck {
        static let qemu = ["/usr/bin/qemu-x86_64"].first { FileManager.default.isExecutableFile(atPath: $0) }

        @Test("on an emulated CPU without AVX2 (Nehalem): exit 15 and one sentence if built for AVX2, else it runs; on Haswell it runs",
              .enabled(if: qemu != nil, "needs qemu-user (scripts/install-deps.sh installs it for the tests)"))
        func olderCPU() async throws {
            let binary = try LiveFilter.binary()
            let qemu = URL(fileURLWithPath: try #require(Self.qemu))
            let info = try await Subprocess.run(binary, ["probe", Sample.landscape.url.path], timeout: .seconds(60))
            #expect(info.succeeded)
            // Which kernels this build has: the same test machine built it, so it reads its own flags.
            let flags = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
                .split(separator: "\n").first { $0.hasPrefix("flags") }.map { " " + $0 + " " } ?? ""
            let builtForAVX2 = ProcessInfo.processInfo.environment["LIVEFILTER_PORTABLE"] != "1"
                && [" avx2 ", " fma ", " bmi2 ", " f16c ", " movbe "].allSatisfy(flags.contains)
            let old = try await Subprocess.run(qemu, ["-cpu", "Nehalem", binary.path, "probe", Sample.landscape.url.path],
                                               timeout: .seconds(120))
            if builtForAVX2 {
                #expect(old.status == 15, "an AVX2 build on Nehalem: \(old.summary)")
                let lines = old.stderrText.split(separator: "\n").filter { !$0.contains("TCG doesn't support") }
                #expect(lines.count == 1 && lines[0].hasPrefix("livefilter: error:") && lines[0].contains("LIVEFILTER_PORTABLE=1"),
                        "\(old.stderrText)")
            } else {
                #expect(old.succeeded, "a baseline build runs anywhere: \(old.summary)")
            }
            let haswell = try await Subprocess.run(qemu, ["-cpu", "Haswell", binary.path, "probe", Sample.landscape.url.path],
                                                   timeout: .seconds(120))
            #expect(haswell.succeeded, "on Haswell: \(haswell.summary)")
            #expect(haswell.stdoutText.contains("duration  5.000 s"))
        }
    }
}
