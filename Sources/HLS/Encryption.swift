/// METHOD of EXT-X-KEY (RFC 8216 §4.3.2.4; rfc8216bis §4.4.4.4 adds SAMPLE-AES-CTR and AES-256-GCM).
/// An open set: a method this library does not know is kept as written, so a client can refuse it
/// by name instead of the parser guessing.
public struct EncryptionMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Segments are not encrypted; the tag carries no other attribute.
    public static let none = Self(rawValue: "NONE")
    /// Whole segments, AES-128 CBC with PKCS7 padding, restarted on each segment (§5.2).
    public static let aes128 = Self(rawValue: "AES-128")
    /// Sample encryption: fMP4 `cbcs`, or the HLS Sample Encryption spec for TS.
    public static let sampleAES = Self(rawValue: "SAMPLE-AES")
    public static let sampleAESCTR = Self(rawValue: "SAMPLE-AES-CTR")
    public static let aes256GCM = Self(rawValue: "AES-256-GCM")
    /// The methods RFC 8216 and rfc8216bis define.
    public static let known: [Self] = [.none, .aes128, .sampleAES, .sampleAESCTR, .aes256GCM]

    public var description: String { rawValue }
}

/// The IV attribute of EXT-X-KEY: a 128-bit unsigned integer, big-endian.
public struct InitializationVector: Hashable, Sendable, CustomStringConvertible {
    /// Sixteen bytes, most significant first: what AES takes.
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Reads a hexadecimal-sequence (RFC 8216 §4.2): `0x` or `0X` and 1 to 32 hex digits (shorter
    /// values are the same integer with leading zeros). Nil for anything else.
    public init?(hexadecimal text: some StringProtocol) {
        let utf8 = Array(text.utf8)
        guard utf8.count > 2, utf8[0] == UInt8(ascii: "0"), utf8[1] | 0x20 == UInt8(ascii: "x") else { return nil }
        let digits = utf8[2...]
        guard digits.count <= 32 else { return nil }
        var nibbles: [UInt8] = []
        nibbles.reserveCapacity(32)
        for d in digits {
            switch d {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibbles.append(d - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibbles.append(d - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibbles.append(d - UInt8(ascii: "A") + 10)
            default: return nil
            }
        }
        nibbles = Array(repeating: 0, count: 32 - nibbles.count) + nibbles
        bytes = (0..<16).map { nibbles[2 * $0] << 4 | nibbles[2 * $0 + 1] }
    }

    /// The IV a segment without an IV attribute uses with AES-128: its Media Sequence Number as a
    /// big-endian 128-bit integer (RFC 8216 §5.2).
    public init(mediaSequenceNumber: Int) {
        let n = UInt64(truncatingIfNeeded: mediaSequenceNumber)
        bytes = Array(repeating: 0, count: 8) + (0..<8).map { UInt8(truncatingIfNeeded: n >> (56 - 8 * $0)) }
    }

    /// `0x` and 32 lowercase hex digits.
    public var description: String {
        let digits = Array("0123456789abcdef")
        return "0x" + String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]] })
    }
}

/// One EXT-X-KEY tag (RFC 8216 §4.3.2.4): how the segments after it, until the next key of the
/// same KEYFORMAT or a METHOD=NONE, are encrypted.
public struct EncryptionKey: Sendable, Equatable {
    public var method: EncryptionMethod
    /// Where the key is; nil only for METHOD=NONE.
    public var uri: String?
    public var iv: InitializationVector?
    /// KEYFORMAT; nil means "identity" (the key file holds the 16 key bytes).
    public var keyFormat: String?
    /// KEYFORMATVERSIONS (`1/2/5`); nil means "1".
    public var keyFormatVersions: [Int]?

    public init(method: EncryptionMethod, uri: String? = nil, iv: InitializationVector? = nil,
                keyFormat: String? = nil, keyFormatVersions: [Int]? = nil) {
        (self.method, self.uri, self.iv, self.keyFormat, self.keyFormatVersions) = (method, uri, iv, keyFormat, keyFormatVersions)
    }

    /// METHOD=NONE: what ends the keys before it.
    public static let methodNone = EncryptionKey(method: .none)

    /// KEYFORMAT with its default: keys of the same effective format replace each other.
    public var effectiveKeyFormat: String { keyFormat ?? "identity" }

    /// The IV for the segment with this Media Sequence Number: the IV attribute, else the number (§5.2).
    public func initializationVector(mediaSequenceNumber: Int) -> InitializationVector {
        iv ?? InitializationVector(mediaSequenceNumber: mediaSequenceNumber)
    }

    /// The tag's attribute list, in the order RFC 8216 lists the attributes.
    var attributeList: String {
        var attributes = ["METHOD=\(method.rawValue)"]
        if let uri { attributes.append("URI=\"\(uri)\"") }
        if let iv { attributes.append("IV=\(iv)") }
        if let keyFormat { attributes.append("KEYFORMAT=\"\(keyFormat)\"") }
        if let versions = keyFormatVersions {
            attributes.append("KEYFORMATVERSIONS=\"\(versions.map(String.init).joined(separator: "/"))\"")
        }
        return attributes.joined(separator: ",")
    }

    /// The keys in force after this tag, given those before it: METHOD=NONE ends them all; another
    /// key replaces the one of its KEYFORMAT (several formats may describe one key, §4.4.4.4).
    func applied(to keys: [EncryptionKey]) -> [EncryptionKey] {
        if method == .none { return [self] }
        return keys.filter { $0.method != .none && $0.effectiveKeyFormat != effectiveKeyFormat } + [self]
    }

    /// The EXT-X-KEY tags that change the keys in force from `old` to `new`, or none if they are equal
    /// or both clear (`[]` and `[.methodNone]` both mean "not encrypted"). Keys read back from these
    /// tags (`applied(to:)`) are `new`, except that an empty `new` after keys is written as
    /// METHOD=NONE and reads back as `[.methodNone]`.
    static func tags(from old: [EncryptionKey], to new: [EncryptionKey]) -> [String] {
        let clear = { (keys: [EncryptionKey]) in keys.allSatisfy { $0.method == .none } }
        guard old != new, !(clear(old) && clear(new)) else { return [] }
        let formats = Set(new.map(\.effectiveKeyFormat))
        // A format that is dropped can only be ended by METHOD=NONE, which ends every key.
        let mustReset = old.contains { $0.method != .none && !formats.contains($0.effectiveKeyFormat) }
        var tags: [String] = []
        if new.isEmpty || (mustReset && new.first?.method != EncryptionMethod.none) { tags.append("#EXT-X-KEY:METHOD=NONE") }
        tags += new.map { "#EXT-X-KEY:" + $0.attributeList }
        return tags
    }
}
