import Broadcast
import Testing

/// The services named from caption data built here from CEA-608 (control codes' channel bit, the
/// two fields) and CEA-708 (DTVCC packets: sequence and size, service block headers, the extended
/// service number) — what a master playlist's INSTREAM-IDs say.
@Suite("Caption services")
struct CaptionServicesTests {
    @Test("608: field and channel; padding names nothing")
    func cea608() {
        var services = CaptionServices()
        services.add([0xFC, 0x80, 0x80, 0xFD, 0x80, 0x80, 0xF8, 0x41, 0x41])  // padding, and cc_valid 0
        #expect(services.instreamIDs.isEmpty)
        services.add([0xFC, 0x94, 0x2C])  // field 1, EDM on channel 1
        services.add([0xFC, 0xC1, 0xC2])  // text: still channel 1
        #expect(services.instreamIDs == ["CC1"])
        services.add([0xFD, 0x1C, 0x2C])  // field 2, EDM on channel 2 (0x1C: bit 3 set)
        #expect(services.instreamIDs == ["CC1", "CC4"])
    }

    @Test("708: each service block's number, the extended one too, across triplets")
    func cea708() {
        var services = CaptionServices()
        // A packet of 4 × 2 = 8 bytes: header (sequence 0, size code 4), service 1 with 2 bytes, an
        // extended header (7) naming service 10 with 1 byte, a null block header.
        let packet: [UInt8] = [0x04, 0x22, 0x41, 0x42, 0xE1, 0x0A, 0x43, 0x00]
        services.add([0xFF, packet[0], packet[1], 0xFE, packet[2], packet[3], 0xFE, packet[4], packet[5]])
        #expect(services.instreamIDs.isEmpty, "the packet is not whole yet")
        services.add([0xFE, packet[6], packet[7]])
        #expect(services.instreamIDs == ["SERVICE1", "SERVICE10"])
    }
}
