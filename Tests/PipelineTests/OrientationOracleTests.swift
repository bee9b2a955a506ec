import Foundation
import LiveFilter
import MediaIO
import Testing

/// Display matrices with mirroring and every quarter turn, checked against the ffmpeg CLI's own
/// autorotate (an independent implementation of the same rule): the same tagged input through
/// `run` and through `ffmpeg` must give the same upright picture.
@Suite(.serialized)
struct OrientationOracleTests {
    /// A copy of the landscape sample whose video carries `matrix` (stream copy, no re-encode).
    static func tagged(_ matrix: DisplayMatrix, in folder: URL) throws -> String {
        let path = folder.appendingPathComponent("tagged.mp4").path
        let demuxer = try Demuxer(url: LibraryAPITests.landscape)
        let muxer = try Muxer(path: path, container: .mp4, overwrite: true)
        let stream = try muxer.addStream(copying: demuxer.video.index, of: demuxer)
        muxer.setDisplayMatrix(streamIndex: stream, matrix)
        try muxer.begin()
        let packet = Packet()
        while case .packet = try demuxer.read(into: packet) {
            guard packet.streamIndex == demuxer.video.index else { continue }
            try muxer.write(packet, toStream: stream, timeBase: demuxer.video.timeBase)
        }
        try muxer.commit()
        return path
    }

    /// Runs the ffmpeg CLI; returns what it wrote to stdout and stderr.
    static func ffmpeg(_ arguments: [String]) throws -> (stdout: Data, stderr: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        p.arguments = ["-v", "info", "-nostats", "-hide_banner"] + arguments
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // Read stderr on the side so neither pipe fills while the other is drained.
        nonisolated(unsafe) var errData = Data()
        let done = DispatchSemaphore(value: 0)
        Thread { errData = err.fileHandleForReading.readDataToEndOfFile(); done.signal() }.start()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        done.wait()
        return (data, String(decoding: errData, as: UTF8.self))
    }

    /// The first frame as RGB24 through the ffmpeg CLI, autorotated unless told not to.
    static func firstFrame(_ path: String, autorotate: Bool = true) throws -> (width: Int, height: Int, pixels: [UInt8]) {
        let (data, log) = try ffmpeg((autorotate ? [] : ["-noautorotate"])
            + ["-i", path, "-frames:v", "1", "-vf", "showinfo", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        let size = try #require(log.firstMatch(of: /s:(\d+)x(\d+)/))
        return (Int(size.1)!, Int(size.2)!, [UInt8](data))
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var degrees: Double
        var mirrored: Bool
        var testDescription: String { "\(Int(degrees))°\(mirrored ? " mirrored" : "")" }
    }

    @Test(arguments: [Case(degrees: 90, mirrored: false), Case(degrees: 90, mirrored: true),
                      Case(degrees: 180, mirrored: true), Case(degrees: 270, mirrored: true),
                      Case(degrees: 0, mirrored: true), Case(degrees: -90, mirrored: false)])
    func runTurnsThePictureLikeFFmpegsAutorotate(_ c: Case) async throws {
        let folder = try LibraryAPITests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = try Self.tagged(.rotation(clockwise: c.degrees, mirrored: c.mirrored), in: folder)
        let output = folder.appendingPathComponent("out.mp4").path
        var job = JobConfiguration(input: input, output: output)
        job.video.rateControl = .crf(12)
        _ = try await ExportSession(job).run()

        let reference = try Self.firstFrame(input)
        let ours = try Self.firstFrame(output, autorotate: false)
        #expect(ours.width == reference.width && ours.height == reference.height)
        try #require(ours.pixels.count == reference.pixels.count && !ours.pixels.isEmpty)
        // Same picture up to compression (a wrong turn or mirror differs by tens of levels).
        let meanError = zip(ours.pixels, reference.pixels).reduce(0.0) { $0 + abs(Double($1.0) - Double($1.1)) }
            / Double(ours.pixels.count)
        #expect(meanError < 3, "mean absolute difference \(meanError) from ffmpeg's autorotate")
        let stored = try Self.firstFrame(input, autorotate: false)
        if c.degrees != 0 || c.mirrored {
            let untouched = stored.width == ours.width ? zip(stored.pixels, ours.pixels).reduce(0.0) { $0 + abs(Double($1.0) - Double($1.1)) }
                / Double(ours.pixels.count) : 100
            #expect(untouched > 10, "the tag must change the picture (else this test proves nothing)")
        }
    }
}
