import Filters
import Foundation
import MediaIO
import Testing

/// MediaIO's output life cycle piece by piece: the atomic file, the wrapper sink, a container file
/// and a PNG sequence (HLS renditions: HLSTests; whole runs: the end-to-end life-cycle suite).
struct OutputLifecycleTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("livefilter-life-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func names(_ folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
    }

    /// `count` PNG packets of 16x16 pictures, and the encoder that made them.
    static func pngPackets(_ count: Int) throws -> (Encoder, [Packet]) {
        let size = FrameSize(width: 16, height: 16)
        let encoder = try Encoder.png(size: size, timeBase: Rational(1, 25))
        var packets: [Packet] = []
        for i in 0..<count {
            let image = RGBImage(size: size)
            image.fill(r: UInt8(i * 40), g: 10, b: 200)
            let frame = try Frame(copying: image)
            frame.presentationTimestamp = Int64(i)
            try encoder.send(frame)
            while case let .packet(p) = try encoder.receive() { packets.append(p) }
        }
        try encoder.sendEndOfStream()
        while case let .packet(p) = try encoder.receive() { packets.append(p) }
        return (encoder, packets)
    }

    // MARK: - AtomicFile

    @Test func atomicFileAppearsWholeUnderItsNameAtCommit() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("a.json").path
        let file = try AtomicFile(path: path, overwrite: false)
        #expect(Self.names(dir).isEmpty, "init creates nothing")
        try file.begin()
        let temporary = Self.names(dir)
        #expect(temporary.count == 1 && temporary[0].hasPrefix(".a.json.livefilter-") && temporary[0].hasSuffix(".tmp"), "\(temporary)")
        try file.write(Array("{}".utf8))
        #expect(!FileManager.default.fileExists(atPath: path))
        try file.commit()
        #expect(Self.names(dir) == ["a.json"])
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "{}")
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o644)
        file.discard()
        #expect(Self.names(dir) == ["a.json"], "discard after commit changes nothing")
    }

    @Test func atomicFileDiscardAndReleaseLeaveNothing() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try AtomicFile(path: dir.appendingPathComponent("a.png").path, overwrite: false)
        try file.begin()
        try file.write([1, 2, 3])
        file.discard()
        file.discard()
        #expect(Self.names(dir).isEmpty)
        #expect(throws: MediaError.self) { try file.commit() }
        do {
            let released = try AtomicFile(path: dir.appendingPathComponent("b.png").path, overwrite: false)
            try released.begin()
            try released.write([1])
        }
        #expect(Self.names(dir).isEmpty, "an uncommitted file is removed when released")
    }

    @Test func atomicFileChecksItsDestinationAndNeverClobbersUnasked() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("a.txt").path
        #expect(throws: MediaError.outputFolderMissing(dir.path + "/nope")) {
            try AtomicFile(path: dir.path + "/nope/a.txt", overwrite: true)
        }
        try FileManager.default.createDirectory(atPath: dir.path + "/sub", withIntermediateDirectories: false)
        #expect(throws: MediaError.outputNotWritable(dir.path + "/sub", reason: "it is a directory")) {
            try AtomicFile(path: dir.path + "/sub", overwrite: true)
        }
        try FileManager.default.removeItem(atPath: dir.path + "/sub")

        // A file that appears between the check and the commit is left alone without `overwrite`.
        let file = try AtomicFile(path: path, overwrite: false)
        try file.begin()
        try file.write(Array("new".utf8))
        try "theirs".write(toFile: path, atomically: false, encoding: .utf8)
        #expect(throws: MediaError.outputExists(path)) { try file.commit() }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "theirs")
        #expect(Self.names(dir) == ["a.txt"], "no temporary file left")
        #expect(throws: MediaError.outputExists(path)) { try AtomicFile(path: path, overwrite: false) }

        // With `overwrite` it is replaced.
        let replacing = try AtomicFile(path: path, overwrite: true)
        try replacing.begin()
        try replacing.write(Array("new".utf8))
        try replacing.commit()
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "new")
    }

    // MARK: - The wrapper sink

    /// Records which requirement reached it.
    // MARK: - Container files and PNG sequences

    @Test(arguments: [OutputContainer.mkv, .mov])
    func containerFileIsTemporaryUntilCommitAndDiscardRemovesIt(_ container: OutputContainer) throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        for finish in [false, true] {
            let path = dir.appendingPathComponent("out.\(container.rawValue)").path
            let muxer = try Muxer(path: path, container: container, overwrite: true)
            let (encoder, packets) = try Self.pngPackets(3)
            let stream = try muxer.addStream(from: encoder)
            #expect(Self.names(dir).isEmpty, "init creates nothing")
            try muxer.begin()
            for p in packets { try muxer.write(p, toStream: stream, timeBase: encoder.timeBase) }
            #expect(Self.names(dir).count == 1 && Self.names(dir)[0].hasPrefix("."), "\(Self.names(dir))")
            if finish {
                try muxer.commit()
                #expect(Self.names(dir) == ["out.\(container.rawValue)"])
            } else {
                muxer.discard()
                muxer.discard()
                #expect(Self.names(dir).isEmpty)
            }
        }
    }

    @Test func faststartIsRefusedWhereItDoesNotApply() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(throws: MediaError.self) {
            try Muxer(path: dir.appendingPathComponent("x.mkv").path, container: .mkv, options: ContainerOptions(faststart: true), overwrite: false)
        }
        #expect(Self.names(dir).isEmpty)
    }

    @Test func pngSequencePublishesEveryFrameAtCommitOrNone() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        for finish in [false, true] {
            let sequence = try ImageSequenceWriter(pattern: dir.path + "/f%03d.png", overwrite: true)
            let (encoder, packets) = try Self.pngPackets(3)
            _ = try sequence.addStream(from: encoder)
            try sequence.begin()
            for p in packets { try sequence.write(p.clone(), toStream: 0, timeBase: encoder.timeBase) }
            #expect(Self.names(dir).filter { !$0.hasPrefix(".") }.isEmpty, "no frame visible before commit")
            #expect(Self.names(dir).count == 3)
            if finish {
                try sequence.commit()
                #expect(Self.names(dir) == ["f001.png", "f002.png", "f003.png"])
                let first = try Data(contentsOf: dir.appendingPathComponent("f001.png"))
                #expect(first.count == packets[0].size && first.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]))
            } else {
                sequence.discard()
                #expect(Self.names(dir).isEmpty)
            }
        }
    }

    @Test(arguments: ["%s.png", "%n%05d.png", "%05d%05d.png", "%999d.png", "plain.png", "%05d/x%d.png"])
    func pngPatternsNeedExactlyOneCounter(_ pattern: String) throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(throws: MediaError.self) { try ImageSequenceWriter(pattern: dir.path + "/" + pattern, overwrite: true) }
        let literal = try ImageSequenceWriter(pattern: dir.path + "/100%%_%02d.png", overwrite: true)
        #expect(literal.pattern.hasSuffix("100%%_%02d.png"))
    }
}
