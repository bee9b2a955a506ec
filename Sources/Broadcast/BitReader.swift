/// Reads big-endian bit fields, most significant bit first, as MPEG and SCTE syntax tables write
/// them. Reading past the end is an error, never a trap: sections come from the network.
struct BitReader {
    private let bytes: [UInt8]
    /// The next bit to read, counted from the first byte's most significant bit.
    private(set) var position: Int

    init(_ bytes: [UInt8], byteOffset: Int = 0) {
        self.bytes = bytes
        position = byteOffset * 8
    }

    var bitsLeft: Int { bytes.count * 8 - position }
    var byteOffset: Int { position / 8 }

    /// The next `count` bits (at most 64) as an unsigned integer.
    mutating func bits(_ count: Int) throws(SCTE35Error) -> UInt64 {
        precondition(count >= 0 && count <= 64)
        guard count <= bitsLeft else { throw .truncated }
        var value: UInt64 = 0
        for _ in 0..<count {
            let byte = bytes[position >> 3]
            value = value << 1 | UInt64(byte >> (7 - UInt8(position & 7)) & 1)
            position += 1
        }
        return value
    }

    mutating func flag() throws(SCTE35Error) -> Bool { try bits(1) == 1 }

    mutating func skip(_ count: Int) throws(SCTE35Error) {
        guard count >= 0, count <= bitsLeft else { throw .truncated }
        position += count
    }

    /// `count` whole bytes; the reader must be on a byte boundary.
    mutating func bytes(_ count: Int) throws(SCTE35Error) -> [UInt8] {
        guard position & 7 == 0, count >= 0, count * 8 <= bitsLeft else { throw .truncated }
        defer { position += count * 8 }
        return Array(bytes[byteOffset..<byteOffset + count])
    }
}
