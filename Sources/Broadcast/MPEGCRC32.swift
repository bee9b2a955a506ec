/// CRC-32/MPEG-2 (polynomial 0x04C11DB7, initial 0xFFFFFFFF, not reflected, no final XOR): the
/// checksum that ends every MPEG-TS section, SCTE-35's `splice_info_section` among them. Over a
/// whole section including its CRC field the result is 0.
enum MPEGCRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index) << 24
        for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? crc << 1 ^ 0x04C1_1DB7 : crc << 1 }
        return crc
    }

    static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = crc << 8 ^ table[Int((crc >> 24) ^ UInt32(byte))] }
        return crc
    }
}
