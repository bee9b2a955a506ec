import Broadcast
import Foundation
import Testing

/// SCTE-35 sections made and read by threefive (PyPI; `scripts/scte35-oracle.py`), an implementation
/// nobody here wrote: ours must read what it writes, field for field, and what we re-time must read
/// back in threefive with the new `pts_adjustment` and a valid CRC_32.
@Suite("SCTE-35 splice_info_section against threefive")
struct SpliceInfoSectionTests {
    struct Made: Decodable { var name: String; var hex: String }
    struct Reading: Decodable {
        var pts_adjustment: UInt64
        var crc_ok: Bool
        var command_type: UInt8
        var event_id: UInt32?
        var out: Bool?
        var immediate: Bool?
        var pts_time: UInt64?
        var break_duration: UInt64?
        var auto_return: Bool?
        var unique_program_id: UInt16?
        struct Descriptor: Decodable { var event_id: UInt32; var type_id: UInt8; var duration: UInt64? }
        var descriptors: [Descriptor]
    }

    static let oracle = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/scte35-oracle.py")

    static func python(_ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", oracle.path] + arguments
        let out = Pipe(), err = Pipe()
        (process.standardOutput, process.standardError) = (out, err)
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try #require(process.terminationStatus == 0,
                     "scte35-oracle.py failed (threefive is installed by LIVEFILTER_PLAYERS=1 scripts/install-deps.sh): \(errors)")
        return data
    }

    static func made() throws -> [Made] { try JSONDecoder().decode([Made].self, from: python(["make"])) }
    static func read(_ hex: [String]) throws -> [Reading] { try JSONDecoder().decode([Reading].self, from: python(["decode"] + hex)) }

    @Test("every section threefive makes reads the same here: command, times, break duration, segmentation descriptors")
    func readsThreefive() throws {
        let made = try Self.made()
        #expect(made.count >= 8)
        let readings = try Self.read(made.map(\.hex))
        for (section, reading) in zip(made, readings) {
            let ours = try SpliceInfoSection(hex: section.hex)
            #expect(ours.ptsAdjustment == reading.pts_adjustment, "\(section.name)")
            #expect(ours.command.type == reading.command_type, "\(section.name)")
            #expect(ours.hex.lowercased() == section.hex.lowercased(), "\(section.name): written back as read")
            switch ours.command {
            case let .insert(insert):
                #expect(insert.eventID == reading.event_id && insert.outOfNetwork == reading.out && insert.immediate == reading.immediate,
                        "\(section.name): \(insert)")
                #expect(insert.spliceTime == reading.pts_time, "\(section.name)")
                #expect(insert.breakDuration?.ticks == reading.break_duration, "\(section.name)")
                #expect(insert.uniqueProgramID == reading.unique_program_id, "\(section.name)")
            case let .timeSignal(time):
                #expect(time == reading.pts_time, "\(section.name)")
            default:
                break
            }
            let segmentation = ours.descriptors.compactMap { if case let .segmentation(d) = $0 { d } else { nil } }
            #expect(segmentation.map(\.eventID) == reading.descriptors.map(\.event_id), "\(section.name)")
            #expect(segmentation.map(\.typeID) == reading.descriptors.map(\.type_id), "\(section.name)")
            #expect(segmentation.map(\.durationTicks) == reading.descriptors.map(\.duration), "\(section.name)")
        }
    }

    @Test("the cue a playlist writes: OUT with the planned duration, IN, or a command")
    func cues() throws {
        let sections = Dictionary(uniqueKeysWithValues: try Self.made().map { ($0.name, try SpliceInfoSection(hex: $0.hex)) })
        #expect(sections["insert-out"]?.cue == .out(plannedSeconds: 30))
        #expect(sections["insert-in"]?.cue == .in)
        #expect(sections["insert-immediate"]?.cue == .out(plannedSeconds: 15))
        #expect(sections["signal-placement-start"]?.cue == .out(plannedSeconds: 60))
        #expect(sections["signal-placement-end"]?.cue == .in)
        #expect(sections["signal-program-start"]?.cue == .command)
        #expect(sections["null"]?.cue == .command)
        // The splice time on the stream's clock: pts_time + pts_adjustment, mod 2^33.
        #expect(sections["insert-out"]?.spliceTime == 1_935_000 + 90_000)
        #expect(sections["insert-wraps"]?.spliceTime == (8_589_870_000 + 1_800_000) % (1 << 33))
        #expect(sections["insert-immediate"]?.spliceTime == nil)
    }

    @Test("re-timed: threefive reads the new pts_adjustment (wrapping at 2^33 both ways) and a valid CRC_32; nothing else changes")
    func retimed() throws {
        let made = try Self.made()
        let shifts: [Int64] = [0, 90_000, -90_000, -8_000_000_000, 8_589_934_591, Int64(1) << 40]
        var hex: [String] = [], expected: [(UInt64, Reading, String)] = []
        let originals = try Self.read(made.map(\.hex))
        for (section, original) in zip(made, originals) {
            for shift in shifts {
                let ours = try SpliceInfoSection(hex: section.hex)
                let moved = ours.adjusted(by: shift)
                let modulus = Int64(1) << 33
                let want = UInt64(((Int64(ours.ptsAdjustment) + shift % modulus) % modulus + modulus) % modulus)
                #expect(moved.ptsAdjustment == want)
                #expect(try SpliceInfoSection(moved.bytes) == moved, "our own reader takes it back (CRC checked)")
                #expect(moved.command == ours.command && moved.descriptors == ours.descriptors)
                hex.append(moved.hex)
                expected.append((want, original, "\(section.name) \(shift)"))
            }
        }
        for (reading, (want, original, name)) in zip(try Self.read(hex), expected) {
            #expect(reading.crc_ok, "\(name)")
            #expect(reading.pts_adjustment == want, "\(name)")
            #expect(reading.pts_time == original.pts_time && reading.break_duration == original.break_duration, "\(name)")
        }
    }

    @Test("damaged sections are errors that say what is wrong, never a trap")
    func damaged() throws {
        let section = try SpliceInfoSection(hex: try #require(Self.made().first).hex)
        var badCRC = section.bytes
        badCRC[badCRC.count - 1] ^= 1
        #expect(throws: SCTE35Error.badChecksum) { try SpliceInfoSection(badCRC) }
        #expect(throws: SCTE35Error.self) { try SpliceInfoSection(Array(section.bytes.dropLast(3))) }
        #expect(throws: SCTE35Error.notASpliceInfoSection(tableID: 0x02)) { try SpliceInfoSection([0x02] + section.bytes.dropFirst()) }
        #expect(throws: SCTE35Error.self) { try SpliceInfoSection(hex: "0xFC3") }
        #expect(throws: SCTE35Error.self) { try SpliceInfoSection(hex: "0x+C30") }
        #expect(throws: SCTE35Error.self) { try SpliceInfoSection([]) }
        // Every truncation and every single-bit flip (CRC fixed up, so the syntax itself is read) of
        // every section: an error or a section, never a crash.
        for made in try Self.made() {
            let bytes = try SpliceInfoSection(hex: made.hex).bytes
            for cut in 0..<bytes.count { _ = try? SpliceInfoSection(bytes.prefix(cut)) }
            for bit in 0..<(bytes.count - 4) * 8 {
                var flipped = bytes
                flipped[bit / 8] ^= UInt8(0x80 >> (bit % 8))
                _ = try? SpliceInfoSection(Self.withCRC(Array(flipped.dropLast(4))))
            }
        }
    }

    /// `body` followed by its CRC-32/MPEG-2, computed bit by bit here (an independent reference).
    static func withCRC(_ body: [UInt8]) -> [UInt8] {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in body {
            for bit in 0..<8 {
                let top = (crc >> 31) ^ UInt32(byte >> (7 - bit) & 1)
                crc = crc << 1 ^ (top == 1 ? 0x04C1_1DB7 : 0)
            }
        }
        return body + [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
    }
}
