import Foundation
import MediaIO
import Testing

/// A live input's decoder gives up the pictures it holds for reordering as soon as no earlier
/// picture can come (`Decoder.releaseHeldPicture`, `HeldPictures`): the same pictures in the same
/// order as a plain decode, each out as soon as the packets sent so far make it the next to show.
struct HeldPicturesTests {
    enum Container: String, CaseIterable { case ts, mp4 }

    /// H.264 with B-pyramids (x264 `medium`: 3 B-frames, `b-pyramid normal`), 4 s of a moving
    /// test pattern with a closed GOP every 30 pictures, made by the ffmpeg CLI.
    static func makeClip(_ container: Container, in folder: URL) throws -> String {
        let path = folder.appendingPathComponent("bframes.\(container.rawValue)").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        p.arguments = ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "4",
                       "-c:v", "libx264", "-preset", "medium", "-bf", "3", "-g", "30", "-x264-params", "b-pyramid=normal", path]
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
        return path
    }

    struct Decoded: Equatable { var pts: Int64; var checksum: UInt64 }

    @Test("pictures released early are the plain decode's, in its order, each out once the packets sent make it next",
          arguments: Container.allCases)
    func releasedPicturesMatchAPlainDecode(container: Container) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("livefilter-held-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = try Self.makeClip(container, in: folder)

        // The oracle: FFmpeg's decoder on its own, drained at the end.
        var plain: [Decoded] = []
        var sentOrder: [Int64] = []
        do {
            let demuxer = try Demuxer(url: path)
            let decoder = try Decoder(demuxer: demuxer, streamIndex: demuxer.video.index)
            let packet = Packet()
            func drain() throws {
                while case let .frame(f) = try decoder.receive() { plain.append(Decoded(pts: f.timestamp ?? -1, checksum: f.pictureChecksum)) }
            }
            while case .packet = try demuxer.read(into: packet) {
                guard packet.streamIndex == demuxer.video.index else { continue }
                sentOrder.append(packet.presentationTimestamp ?? -1)
                try decoder.send(packet)
                try drain()
            }
            decoder.sendEndOfStream()
            try drain()
        }
        #expect(plain.count == 120)
        #expect(plain.map(\.pts) == plain.map(\.pts).sorted(), "the plain decode is in display order")
        // The clip reorders: a picture sent later is shown earlier.
        #expect(sentOrder != sentOrder.sorted())

        // Released after every packet, as if each packet ended an LL-HLS part.
        var early: [Decoded] = []
        var releases = 0, flushes = 0
        var lateness: [Int] = []
        do {
            let demuxer = try Demuxer(url: path)
            let decoder = try Decoder(demuxer: demuxer, streamIndex: demuxer.video.index, releasingHeldPictures: true)
            #expect(decoder.releasesHeldPictures)
            var held = HeldPictures()
            let packet = Packet()
            @discardableResult
            func drain(released: Bool = false) throws -> Int {
                var n = 0
                while case let .frame(f) = try decoder.receive() {
                    let pts = f.timestamp ?? -1
                    held.output(pts, released: released)
                    early.append(Decoded(pts: pts, checksum: f.pictureChecksum))
                    n += 1
                }
                return n
            }
            var sent: [Int64] = []
            let all = sentOrder.sorted()
            while case .packet = try demuxer.read(into: packet) {
                guard packet.streamIndex == demuxer.video.index else { continue }
                let pts = packet.presentationTimestamp ?? -1
                sent.append(pts)
                if held.needsFlushBeforeIDR, packet.h264IsIDR(lengthSize: decoder.h264LengthSize) == true {
                    decoder.sendEndOfStream()
                    #expect(try drain() == 0, "nothing was held")
                    decoder.resume()
                    held.flushed()
                    flushes += 1
                }
                held.sent(pts)
                try decoder.send(packet)
                try drain()
                var count = held.releasable
                while count > 0 {
                    count -= 1
                    try decoder.releaseHeldPicture()
                    guard try drain(released: true) > 0 else { break }
                    releases += 1
                }
                // Independent of `HeldPictures`: the pictures that must be out now are those shown
                // before the first one not yet sent (knowing the whole stream).
                let firstMissing = all.first { !sent.contains($0) } ?? Int64.max
                let due = all.filter { $0 < firstMissing }.count
                lateness.append(due - early.count)
            }
            decoder.sendEndOfStream()
            try drain()
        }
        #expect(early == plain, "same pictures, same order")
        #expect(releases > 0)
        // Each GOP's last pictures were given up early, so each IDR after the first was preceded by a flush.
        #expect(flushes == 3)
        // At the start the decoder keeps its own delay (the frame interval is learned from its first
        // pictures out); from then on no picture due waits for a later packet.
        let settled = try #require(lateness.firstIndex(of: 0), "pictures due but still held: \(lateness)")
        #expect(settled <= 4 && lateness[settled...].allSatisfy { $0 <= 0 }, "pictures due but still held: \(lateness)")
    }

    @Test func heldPicturesNeedEverySlotBeforeThemFilled() {
        var held = HeldPictures()
        #expect(held.releasable == 0)
        held.sent(0); held.output(0)
        held.sent(3)  // P3 held: 1 and 2 still to come
        #expect(held.releasable == 0)
        held.sent(1); held.output(1)
        #expect(held.releasable == 0, "2 is still to come")
        held.sent(2)
        #expect(held.releasable == 2, "2 then 3 run on from 1")
        held.output(2); held.output(3)
        #expect(held.awaiting.isEmpty)
        // A picture left out (not decoded) still fills its slot; a gap does not.
        held.sent(6); held.sent(4)
        #expect(held.releasable == 1)
        held.leftOut(5)
        #expect(held.releasable == 2, "4 and 6: 5 will not come")
        held.output(4, released: true); held.output(6, released: true)
        #expect(held.needsFlushBeforeIDR)
        held.sent(7)
        #expect(!held.needsFlushBeforeIDR, "7 is held: the decoder's own output will follow")
        held.flushed()
        #expect(held.releasable == 0)
    }
}
