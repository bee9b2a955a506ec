import Foundation

/// Why bytes are not an ID3v2 tag livefilter can read.
public enum ID3Error: Error, Sendable, Equatable, CustomStringConvertible {
    case truncated
    case notAnID3Tag
    case unsupportedVersion(UInt8)
    case malformed(String)

    public var description: String {
        switch self {
        case .truncated: "the ID3 tag ends before its header, size or frames say"
        case .notAnID3Tag: "not an ID3v2 tag (no 'ID3' header, and not one FFmpeg 5.1's MPEG-TS demuxer cut the first five bytes of)"
        case let .unsupportedVersion(version): "ID3v2.\(version): timed metadata is ID3v2.3 or 2.4"
        case let .malformed(why): "a malformed ID3 tag: \(why)"
        }
    }
}

/// One ID3v2.3 or 2.4 tag (id3.org "ID3 tag version 2.4.0 – Main Structure"), as timed metadata
/// carries it: in an MPEG-TS PES of stream type 0x15 (Apple's "Timed Metadata for HTTP Live
/// Streaming") or an `emsg` (`EventMessageBox.id3`). Kept as its bytes, so passing it on changes
/// nothing; its frames are read to check it and for the report (TXXX, PRIV, the text frames).
///
/// FFmpeg 5.1's MPEG-TS demuxer drops the first five bytes of every stream-type-0x15 PES payload
/// (it takes them for a metadata AU cell header, ISO/IEC 13818-1 §2.12.4, which Apple's timed ID3
/// does not have): the packet it hands over starts at the tag's flags byte. `init(demuxed:)` puts
/// `ID3` and the version back.
public struct ID3Tag: Sendable, Equatable {
    /// One frame: its four-character ID, flags and body (de-unsynchronised).
    public struct Frame: Sendable, Equatable {
        public var id: String
        public var flags: UInt16
        public var body: [UInt8]

        /// A text frame's text (`T…` but `TXXX`): the first string (ID3v2.4 separates several with NUL).
        public var text: String? {
            guard id.hasPrefix("T"), id != "TXXX", let encoding = body.first else { return nil }
            return ID3Tag.strings(body.dropFirst(), encoding: encoding, count: 1).first
        }

        /// `TXXX`: its description and value.
        public var userText: UserText? {
            guard id == "TXXX", let encoding = body.first else { return nil }
            let strings = ID3Tag.strings(body.dropFirst(), encoding: encoding, count: 2)
            return strings.count == 2 ? UserText(description: strings[0], value: strings[1]) : nil
        }

        /// `PRIV`: its owner and private data (com.apple.streaming.transportStreamTimestamp, ad beacons…).
        public var privateData: PrivateData? {
            guard id == "PRIV", let end = body.firstIndex(of: 0) else { return nil }
            return PrivateData(owner: String(decoding: body[..<end], as: UTF8.self), data: Array(body[(end + 1)...]))
        }
    }

    public struct UserText: Sendable, Equatable { public var description: String; public var value: String }
    public struct PrivateData: Sendable, Equatable { public var owner: String; public var data: [UInt8] }

    /// The whole tag, header included, as it travels.
    public let bytes: [UInt8]
    /// 3 or 4 (ID3v2.3, ID3v2.4).
    public let majorVersion: UInt8
    public let frames: [Frame]

    public init(_ tag: some Collection<UInt8>) throws(ID3Error) {
        let bytes = Array(tag)
        guard bytes.count >= 10 else { throw .truncated }
        guard bytes[0] == 0x49, bytes[1] == 0x44, bytes[2] == 0x33 else { throw .notAnID3Tag }
        guard bytes[3] == 3 || bytes[3] == 4 else { throw .unsupportedVersion(bytes[3]) }
        let flags = bytes[5]
        guard let size = Self.syncsafe(bytes[6..<10]) else { throw .malformed("the tag size is not syncsafe") }
        let end = 10 + size + (bytes[3] == 4 && flags & 0x10 != 0 ? 10 : 0)
        guard end <= bytes.count else { throw .truncated }
        majorVersion = bytes[3]
        self.bytes = Array(bytes[..<end])
        frames = try Self.frames(Array(bytes[10..<10 + size]), version: bytes[3], tagFlags: flags)
    }

    /// A timed-metadata packet as a demuxer gave it: a whole tag, or one FFmpeg 5.1's MPEG-TS
    /// demuxer cut the first five bytes of ("ID3", version, revision), which are put back — v2.4
    /// (Apple's timed metadata) if the frames read as v2.4, else v2.3.
    public init(demuxed packet: some Collection<UInt8>) throws(ID3Error) {
        let bytes = Array(packet)
        if bytes.starts(with: [0x49, 0x44, 0x33]) {
            try self.init(bytes)
            return
        }
        guard bytes.count >= 5, bytes[0] & 0x0F == 0 else { throw .notAnID3Tag }
        do {
            try self.init([0x49, 0x44, 0x33, 4, 0] + bytes)
        } catch {
            try self.init([0x49, 0x44, 0x33, 3, 0] + bytes)
        }
    }

    public func frames(_ id: String) -> [Frame] { frames.filter { $0.id == id } }

    // MARK: Syntax

    private static func syncsafe(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.allSatisfy({ $0 & 0x80 == 0 }) else { return nil }
        return bytes.reduce(0) { $0 << 7 | Int($1) }
    }

    /// `FF 00` back to `FF` (ID3v2 §6.1).
    private static func resynchronised(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            out.append(bytes[index])
            index += bytes[index] == 0xFF && index + 1 < bytes.count && bytes[index + 1] == 0 ? 2 : 1
        }
        return out
    }

    private static func frames(_ area: [UInt8], version: UInt8, tagFlags: UInt8) throws(ID3Error) -> [Frame] {
        // ID3v2.3 unsynchronises the whole tag; v2.4 each frame (the tag flag says all of them are).
        let body = version == 3 && tagFlags & 0x80 != 0 ? resynchronised(area) : area
        var position = 0
        if tagFlags & 0x40 != 0 {  // the extended header: size excludes itself in v2.3, includes itself (syncsafe) in v2.4
            guard body.count >= 4 else { throw .truncated }
            let size = version == 4 ? syncsafe(body[0..<4]) : Int(body[0]) << 24 | Int(body[1]) << 16 | Int(body[2]) << 8 | Int(body[3])
            guard let size, size >= 0 else { throw .malformed("the extended header's size is not syncsafe") }
            position = version == 4 ? size : size + 4
            guard position <= body.count else { throw .truncated }
        }
        var frames: [Frame] = []
        while position + 10 <= body.count, body[position] != 0 {  // zeros after the frames are padding
            let idBytes = body[position..<position + 4]
            guard idBytes.allSatisfy({ (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }) else {
                throw .malformed("frame ID \(idBytes.map { String(format: "%02x", $0) }.joined()) at byte \(10 + position)")
            }
            let sizeBytes = body[position + 4..<position + 8]
            let size: Int
            if version == 4 {
                guard let safe = syncsafe(sizeBytes) else { throw .malformed("a v2.4 frame size that is not syncsafe") }
                size = safe
            } else {
                size = sizeBytes.reduce(0) { $0 << 8 | Int($1) }
            }
            let flags = UInt16(body[position + 8]) << 8 | UInt16(body[position + 9])
            guard position + 10 + size <= body.count else { throw .truncated }
            var frameBody = Array(body[position + 10..<position + 10 + size])
            if version == 4, flags & 0x0002 != 0 || tagFlags & 0x80 != 0 { frameBody = resynchronised(frameBody) }
            frames.append(Frame(id: String(decoding: idBytes, as: UTF8.self), flags: flags, body: frameBody))
            position += 10 + size
        }
        guard body[min(position, body.count)...].allSatisfy({ $0 == 0 }) else { throw .malformed("bytes after the frames that are not padding") }
        return frames
    }

    /// Up to `count` strings in ID3's text `encoding` (0 Latin-1, 1 UTF-16 with BOM, 2 UTF-16BE, 3 UTF-8).
    static func strings(_ bytes: ArraySlice<UInt8>, encoding: UInt8, count: Int) -> [String] {
        let wide = encoding == 1 || encoding == 2
        var result: [String] = [], start = bytes.startIndex, index = bytes.startIndex
        func take(_ end: Int) {
            let data = Data(bytes[start..<end])
            let text: String? = switch encoding {
            case 0: String(data: data, encoding: .isoLatin1)
            case 1: String(data: data, encoding: .utf16)
            case 2: String(data: data, encoding: .utf16BigEndian)
            default: String(data: data, encoding: .utf8)
            }
            result.append(text ?? "")
        }
        while index < bytes.endIndex, result.count < count {
            if wide {
                guard index + 1 < bytes.endIndex else { break }
                if bytes[index] == 0, bytes[index + 1] == 0, (index - start) % 2 == 0 {
                    take(index)
                    index += 2
                    start = index
                    continue
                }
                index += 1
            } else {
                if bytes[index] == 0 {
                    take(index)
                    start = index + 1
                }
                index += 1
            }
        }
        if result.count < count, start < bytes.endIndex { take(bytes.endIndex) }
        return result
    }
}
