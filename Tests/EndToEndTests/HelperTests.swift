import Foundation
import Testing

/// Checks the test helpers themselves against the committed samples, so that when an end-to-end test
/// fails the fault is in livefilter, not in the probe, box or picture code. These need no livefilter.
@Suite
struct HelperTests {
    @Test("package root and samples are found")
    func paths() {
        #expect(FileManager.default.fileExists(atPath: Paths.packageRoot.appendingPathComponent("Package.swift").path))
        for sample in Sample.allCases {
            #expect(FileManager.default.fileExists(atPath: sample.url.path), "missing \(sample.rawValue)")
        }
    }

    @Test("livefilter lookup returns an executable file, if any")
    func binaryLookup() {
        guard let binary = Paths.livefilter else { return }  // not built yet: the e2e tests report it
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: binary.path, isDirectory: &isDirectory))
        #expect(!isDirectory.boolValue)
        #expect(FileManager.default.isExecutableFile(atPath: binary.path))
        #expect(binary.lastPathComponent == "livefilter")
    }

    @Test("ffprobe JSON: landscape.mp4")
    func probeLandscape() async throws {
        let info = try await FFprobe.probe(Sample.landscape.url, countFrames: true)
        let video = try #require(info.video)
        #expect(video.codecName == "h264")
        #expect(video.profile == "High")
        #expect(video.level == 30)
        #expect(video.width == 640 && video.height == 360)
        #expect(video.pixFmt == "yuv420p")
        #expect(video.colorSpace == "bt709" && video.colorPrimaries == "bt709" && video.colorTransfer == "bt709")
        #expect(video.colorRange == "tv")
        #expect(video.readFrames == 150)
        #expect(video.rFrameRate == "30/1" && video.frameRate == 30)
        #expect(abs((video.durationSeconds ?? 0) - 5) < 0.001)
        #expect(video.displayMatrix == nil && video.rotation == 0)
        let audio = try #require(info.audio)
        #expect(audio.codecName == "aac" && audio.sampleRateValue == 48000 && audio.channels == 2)
        #expect(abs((info.format?.durationSeconds ?? 0) - 5) < 0.05)
        #expect((info.format?.bitRateValue ?? 0) > 0)
        #expect(abs(try await FFprobe.measuredVideoDuration(Sample.landscape.url) - 5) < 0.002)
    }

    @Test("ffprobe JSON: display matrix of portrait-rotated.mp4")
    func probeRotation() async throws {
        let video = try #require(try await FFprobe.probe(Sample.portraitRotated.url).video)
        #expect(video.displayMatrix != nil)
        #expect(video.rotation == 90)
        #expect(video.width == 640 && video.height == 360)
        let shown = try #require(video.displaySize)
        #expect(shown.width == 360 && shown.height == 640)
    }

    @Test("ffprobe frames: vfr.mkv really is variable-rate; transport.ts starts late")
    func probeFrames() async throws {
        let frames = try await FFprobe.videoFrames(Sample.vfr.url)
        #expect(frames.count == 73)
        let times = frames.compactMap(\.time)
        let gapsMs = Set(zip(times.dropFirst(), times).map { (($0 - $1) * 1000 / 33.3).rounded() })
        #expect(gapsMs.isSuperset(of: [1, 2, 3, 4]), "gaps in frame units: \(gapsMs.sorted())")
        #expect(frames.first?.isKey == true)

        let ts = try await FFprobe.probe(Sample.transport.url, countFrames: true)
        #expect((ts.video?.startSeconds ?? 0) > 1.3)
        #expect(ts.video?.readFrames == 75)
        #expect(abs(try await FFprobe.measuredVideoDuration(Sample.transport.url) - 3) < 0.002)
    }

    @Test("odd-size sample is 641x361 and even rounding accepts 640 or 642")
    func oddSize() async throws {
        let video = try #require(try await FFprobe.probe(Sample.oddSize.url).video)
        #expect(video.width == 641 && video.height == 361)
        expectEvenRounded(640, from: 641, "width")
        expectEvenRounded(362, from: 361, "height")
        expectEvenRounded(360, from: 360, "height")
    }

    @Test("MP4 boxes: faststart sample has moov before mdat; a plain remux does not")
    func boxes() async throws {
        let boxes = try MP4Boxes.topLevel(of: Sample.landscape.url)
        #expect(boxes.map(\.type) == ["ftyp", "moov", "free", "mdat"])
        let size = try FileManager.default.attributesOfItem(atPath: Sample.landscape.url.path)[.size] as? Int
        #expect(boxes.last.map { Int($0.offset + $0.size) } == size)
        #expect(try MP4Boxes.moovBeforeMdat(Sample.landscape.url))

        let sandbox = try Sandbox("boxes")

        defer { sandbox.remove() }
        let plain = sandbox.file("plain.mp4")
        try await ffmpeg(["-i", Sample.landscape.url.path, "-c", "copy", plain.path])
        #expect(try MP4Boxes.moovBeforeMdat(plain) == false)
        #expect(try MP4Boxes.topLevel(of: plain).map(\.type).contains("moov"))
    }

    @Test("MP4 boxes: 64-bit sizes and size 0")
    func largeBoxes() throws {
        var bytes: [UInt8] = [0, 0, 0, 16] + Array("ftyp".utf8) + Array("isom".utf8) + [0, 0, 2, 0]
        // A 'moov' with a 64-bit size (1, type, then 24 as UInt64) and 8 bytes of payload.
        bytes += [0, 0, 0, 1] + Array("moov".utf8) + [0, 0, 0, 0, 0, 0, 0, 24] + [UInt8](repeating: 7, count: 8)
        // An 'mdat' running to the end of the file (size 0).
        bytes += [0, 0, 0, 0] + Array("mdat".utf8) + [UInt8](repeating: 9, count: 5)
        let sandbox = try Sandbox("boxes")
        defer { sandbox.remove() }
        let file = sandbox.file("synthetic.mp4")
        try Data(bytes).write(to: file)
        let boxes = try MP4Boxes.topLevel(of: file)
        #expect(boxes == [
            .init(type: "ftyp", offset: 0, size: 16),
            .init(type: "moov", offset: 16, size: 24),
            .init(type: "mdat", offset: 40, size: 13),
        ])
        #expect(try MP4Boxes.moovBeforeMdat(file))

        try Data([0, 0, 0, 99] + Array("moov".utf8)).write(to: file)  // claims more than the file holds
        #expect(throws: ToolFailure.self) { try MP4Boxes.topLevel(of: file) }
    }

    @Test("decoded corners find the white marker", arguments: [
        (Sample.landscape, RGBPicture.Corner.topLeft, true),
        (Sample.portraitRotated, .bottomLeft, true),  // ffmpeg autorotates: 90° counter-clockwise
        (Sample.portraitRotated, .topLeft, false),    // stored pixels
        (Sample.oddSize, .topLeft, true),
        (Sample.transport, .topLeft, true),
    ])
    func marker(sample: Sample, corner: RGBPicture.Corner, autorotate: Bool) async throws {
        let picture = try await RGBPicture.firstFrame(of: sample.url, autorotate: autorotate)
        #expect(picture.whiteCorners == [corner])
        // Against a transform whose effect is known: after ffmpeg's hflip each corner holds what the
        // opposite corner of the same row held, so the corner code reads the same squares mirrored.
        let mirrored = try await RGBPicture.firstFrame(of: sample.url, filter: "hflip", autorotate: autorotate)
        #expect(mirrored.width == picture.width && mirrored.height == picture.height)
        #expect(mirrored.whiteCorners == [Self.acrossTheRow(corner)])
        for c in RGBPicture.Corner.allCases {
            let distance = colourDistance(mirrored.meanColour(c), picture.meanColour(Self.acrossTheRow(c)))
            #expect(distance <= 4, "\(c) of the mirrored frame against \(Self.acrossTheRow(c)) of the frame: \(distance)")
        }
    }

    /// The corner a horizontal mirror moves `corner` to.
    static func acrossTheRow(_ corner: RGBPicture.Corner) -> RGBPicture.Corner {
        switch corner {
        case .topLeft: .topRight
        case .topRight: .topLeft
        case .bottomLeft: .bottomRight
        case .bottomRight: .bottomLeft
        }
    }

    @Test("subprocess time limit kills a hung child")
    func timeout() async throws {
        let start = ContinuousClock.now
        let result = try await Subprocess.run(URL(fileURLWithPath: "/bin/sleep"), ["30"], timeout: .seconds(1))
        #expect(result.timedOut)
        #expect(!result.succeeded)
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    @Test("subprocess: a stderr line is seen as it is written, while the child runs; the whole stderr is kept")
    func streamedLine() async throws {
        let child = try Subprocess(URL(fileURLWithPath: "/bin/sh"), ["-c", "echo starting >&2; echo ready >&2; exec sleep 30"],
                                   streamingStderr: true)
        defer { child.send(SIGKILL) }
        let line = try await child.firstStderrLine("'ready'", within: .seconds(20)) { $0 == "ready" }
        #expect(line == "ready" && child.isRunning)
        child.send(SIGKILL)
        let result = await child.wait(timeout: .seconds(20))
        #expect(!result.exitedNormally && result.status == SIGKILL && !result.timedOut)
        #expect(result.stderrLines == ["starting", "ready"])
        // A line that never comes: a failure naming what did, once the child is gone.
        let quiet = try Subprocess(URL(fileURLWithPath: "/bin/sh"), ["-c", "echo other >&2"], streamingStderr: true)
        await #expect(throws: ToolFailure.self) { try await quiet.firstStderrLine("'ready'", within: .seconds(20)) { $0 == "ready" } }
        #expect(await quiet.wait().succeeded)
    }

    @Test("folder watch: a file renamed into the folder is seen, one made elsewhere is not")
    func folderWatch() async throws {
        let watched = try Sandbox("watched"), other = try Sandbox("unwatched")
        defer { watched.remove(); other.remove() }
        let watch = try FolderWatch(watched.url)
        defer { watch.stop() }
        try Data("x".utf8).write(to: other.file("elsewhere.m3u8"))
        try Data("x".utf8).write(to: other.file(".index.tmp"))
        #expect(rename(other.file(".index.tmp").path, watched.file("index.m3u8").path) == 0)
        #expect(try await watch.first("a playlist", within: .seconds(20)) { $0.hasSuffix(".m3u8") } == "index.m3u8")
    }

    @Test("subprocess captures large stdout and exit status")
    func capture() async throws {
        let big = try await RGBPicture.firstFrame(of: Sample.landscape.url)
        #expect(big.pixels.count == 640 * 360 * 3)
        let failing = try await Subprocess.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "echo oops >&2; exit 7"])
        #expect(failing.exitedNormally && failing.status == 7)
        #expect(failing.stderrLines == ["oops"])
    }
}
