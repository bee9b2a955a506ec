import Foundation

/// Top-level boxes (atoms) of an ISO BMFF / MP4 / MOV file, read from the file's bytes.
enum MP4Boxes {
    struct Box: Sendable, Equatable {
        var type: String
        var offset: UInt64
        var size: UInt64
    }

    /// Reads box headers only: a 32-bit big-endian size and a four-character type; size 1 means a
    /// 64-bit size follows the type, size 0 means "to the end of the file".
    static func topLevel(of url: URL) throws -> [Box] {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        let fileSize = try handle.seekToEnd()
        var boxes: [Box] = []
        var offset: UInt64 = 0
        while offset + 8 <= fileSize {
            try handle.seek(toOffset: offset)
            let header = [UInt8](try handle.read(upToCount: 16) ?? Data())
            guard header.count >= 8 else { break }
            var size = UInt64(bigEndian32(header, 0))
            let type = String(decoding: header[4..<8], as: UTF8.self)
            var headerSize: UInt64 = 8
            if size == 1 {
                guard header.count >= 16 else { throw ToolFailure("truncated 64-bit box header at \(offset)") }
                size = UInt64(bigEndian32(header, 8)) << 32 | UInt64(bigEndian32(header, 12))
                headerSize = 16
            } else if size == 0 {
                size = fileSize - offset
            }
            guard size >= headerSize, offset + size <= fileSize else {
                throw ToolFailure("box '\(type)' at \(offset) has bad size \(size) (file is \(fileSize) bytes)")
            }
            boxes.append(Box(type: type, offset: offset, size: size))
            offset += size
        }
        return boxes
    }

    /// True when the file has both a `moov` and an `mdat` box and `moov` comes first (faststart).
    static func moovBeforeMdat(_ url: URL) throws -> Bool {
        let types = try topLevel(of: url).map(\.type)
        guard let moov = types.firstIndex(of: "moov"), let mdat = types.firstIndex(of: "mdat") else { return false }
        return moov < mdat
    }

    private static func bigEndian32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }
}
