import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension EndToEnd {
    /// Faults during a run (RELIABILITY.md, "Faults" and "Security"): a full disk, the output folder
    /// removed, SIGTERM, hostile output names, file permissions. The faults for every output type
    /// (encoder failure, disk full, SIGTERM) are in RobustnessLifecycleTests.swift.
    @Suite("Robustness: faults")
    struct RobustnessFaults {
        @Test("disk full (a 1 MB tmpfs, when mount is allowed): exit 7, nothing left")
        func diskFullOnTmpfs() async throws {
            let sandbox = try Sandbox("robust-tmpfs")
            defer { sandbox.remove() }
            let mountPoint = sandbox.file("small")
            try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
            let mount = try await Subprocess.run(URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint.path])
            guard mount.succeeded else {
                // Not root, or a container without CAP_SYS_ADMIN: the ulimit test covers the code path.
                print("diskFullOnTmpfs: mount not allowed here (\(mount.stderrText.trimmingCharacters(in: .whitespacesAndNewlines))); skipped")
                return
            }
            defer { _ = umount(mountPoint.path) }
            // Two seconds of 1280x720 at crf 10 is well over 1 MB.
            let output = mountPoint.appendingPathComponent("big.mp4")
            let result = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", output.path, "--chain", "scale 1280x720",
                                                   "--crf", "5", "--quiet"])
            LiveFilter.expectError(result, .outputFolder, mentioning: "no space left")
            #expect(try FileManager.default.contentsOfDirectory(atPath: mountPoint.path).isEmpty, "the tmpfs is empty again")
        }

        /// An 8 s 1280x720 input: with `blur sigma=30` it takes far longer to filter than to make.
        /// A 720p clip long enough that a run is still going when the test interferes with it: at
        /// about 80 fps with the AVX2 build, 8 s of input finished within 3 s, so the tests ask for more.
        static func longInput(_ sandbox: Sandbox, seconds: Int) async throws -> URL {
            let input = sandbox.file("long.mp4")
            try await ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=1280x720:r=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                              "-t", "\(seconds)", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", input.path],
                             timeout: .seconds(180))
            return input
        }

        /// Starts `livefilter run ARGS… --progress json` and returns once it reports frames written:
        /// its output is open and being written, however long it took to get there.
        static func startWriting(_ arguments: [String]) async throws -> (Subprocess, LiveFilter.Progress) {
            let child = try LiveFilter.start(arguments + ["--progress", "json"])
            do {
                return (child, try await LiveFilter.progress(of: child, "frames written") { $0.framesWritten > 0 })
            } catch {
                child.send(SIGKILL)
                throw error
            }
        }

        @Test("the output folder removed mid-run: exit 7, one line, no crash", arguments: ["out.mp4", "out.ts", "out.m3u8", "%04d.png"])
        func outputFolderRemoved(name: String) async throws {
            let sandbox = try Sandbox("robust-rmdir")
            defer { sandbox.remove() }
            let input = try await Self.longInput(sandbox, seconds: 16)
            let folder = sandbox.file("out")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let (child, _) = try await Self.startWriting(["run", input.path, "-o", folder.appendingPathComponent(name).path,
                                                          "--chain", "blur sigma=30", "--quiet", "--hls-time", "1"])
            defer { child.send(SIGKILL) }
            #expect(child.isRunning, "finished before the folder could be removed")
            // Moved away in one rename, then deleted: a recursive delete races with the run's own
            // temporary files appearing and disappearing inside the folder.
            let gone = sandbox.file("gone")
            try FileManager.default.moveItem(at: folder, to: gone)
            let result = await child.wait(timeout: .seconds(90))
            try? FileManager.default.removeItem(at: gone)
            LiveFilter.expectError(LiveFilter.withoutProgress(result), .outputFolder)
            #expect(!FileManager.default.fileExists(atPath: folder.path))
        }

        @Test("SIGTERM is handled like Ctrl-C: exit 143, a playable output, no temporaries")
        func sigterm() async throws {
            let sandbox = try Sandbox("robust-term")
            defer { sandbox.remove() }
            let input = try await Self.longInput(sandbox, seconds: 30)
            let folder = sandbox.file("out")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let output = folder.appendingPathComponent("partial.mp4")
            let (child, before) = try await Self.startWriting(["run", input.path, "-o", output.path, "--chain", "blur sigma=30", "--quiet"])
            defer { child.send(SIGKILL) }
            #expect(child.isRunning, "finished before the signal")
            child.send(SIGTERM)
            let result = await child.wait(timeout: .seconds(60))
            #expect(result.exitedNormally && result.status == MoreExitCodes.terminated, "\(result.summary)")
            #expect(!result.stderrText.contains("livefilter: error:"), "\(result.stderrText)")
            let decode = try await Subprocess.run(Paths.ffmpeg, ["-v", "error", "-nostdin", "-i", output.path, "-f", "null", "-"])
            #expect(decode.succeeded && decode.stderrText.isEmpty, "playable: \(decode.stderrText)")
            let frames = try #require(try await FFprobe.probe(output, countFrames: true).video?.readFrames)
            // What was written before the signal is kept; stopped early in a 900-frame input.
            #expect(frames >= max(1, before.framesWritten) && frames < 600, "\(frames) frames, \(before.framesWritten) written before the signal")
            #expect(try sandbox.contents(of: "out") == ["partial.mp4"])
        }

        @Test("security: output names cannot escape the output folder or reach a format function", arguments: [
            ("out/../../x/%05d.png", ExitCode.outputFolder),
            ("out/%05d/../../../e/%05d.png", .usage),
            ("out/..%05d.png", .usage),
            ("out/%s.png", .usage),
            ("out/%n%05d.png", .usage),
            ("out/%05d%05d.png", .usage),
            ("out/%999d.png", .usage),
            ("out/a%d.m3u8", .usage),
            ("out/a%s/x.mp4", .outputFolder),
        ])
        func hostileOutputNames(pattern: String, code: ExitCode) async throws {
            let sandbox = try Sandbox("robust-names")
            defer { sandbox.remove() }
            let root = sandbox.file("root")
            try FileManager.default.createDirectory(at: root.appendingPathComponent("out"), withIntermediateDirectories: true)
            let result = try await LiveFilter.run(["run", Sample.landscape.url.path, "-o", root.path + "/" + pattern, "--max-duration", "0.2"])
            LiveFilter.expectError(result, code)
            #expect(try sandbox.contents() == ["root"], "nothing outside the output folder")
            #expect(try sandbox.contents(of: "root") == ["out"])
            #expect(try sandbox.contents(of: "root/out").isEmpty)
        }

        @Test("security: HLS segments and playlists are written 0644 whatever the umask")
        func hlsPermissions() async throws {
            let sandbox = try Sandbox("robust-perm")
            defer { sandbox.remove() }
            let playlist = sandbox.file("index.m3u8")
            let result = try await livefilterInShell("umask 077", ["run", Sample.landscape.url.path, "-o", playlist.path, "--hls-time", "1",
                                                                   "--quiet"])
            try LiveFilter.requireSuccess(result)
            let names = try sandbox.contents()
            #expect(names.count >= 5, "\(names)")
            for name in names {
                let mode = try #require(try FileManager.default.attributesOfItem(atPath: sandbox.file(name).path)[.posixPermissions] as? Int)
                #expect(mode == 0o644, "\(name): \(String(mode, radix: 8))")
            }
        }
    }
}
