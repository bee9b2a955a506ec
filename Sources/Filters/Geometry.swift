/// A rectangle of pixels: `x`, `y` is the top-left pixel, `width`×`height` its extent.
public struct PixelRect: Hashable, Sendable, CustomStringConvertible {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public var size: FrameSize { FrameSize(width: width, height: height) }

    /// Whether the rectangle is non-empty and lies entirely inside a frame of `frame` size.
    public func isInside(_ frame: FrameSize) -> Bool {
        width > 0 && height > 0 && x >= 0 && y >= 0 && x + width <= frame.width && y + height <= frame.height
    }

    /// `WxH+X+Y`, the form the chain grammar uses for crops.
    public var description: String { "\(width)x\(height)+\(x)+\(y)" }
}

/// An 8-bit RGB colour.
public struct RGBColor: Hashable, Sendable, CustomStringConvertible {
    public var r: UInt8
    public var g: UInt8
    public var b: UInt8

    public init(r: UInt8, g: UInt8, b: UInt8) {
        self.r = r
        self.g = g
        self.b = b
    }

    public static let black = RGBColor(r: 0, g: 0, b: 0)
    public static let white = RGBColor(r: 255, g: 255, b: 255)

    /// Parses `#RRGGBB` (the `#` is optional).
    public init?(hex: String) {
        var text = Substring(hex)
        if text.hasPrefix("#") { text = text.dropFirst() }
        guard text.count == 6, text.allSatisfy(\.isHexDigit), let value = UInt32(text, radix: 16) else { return nil }
        self.init(r: UInt8(value >> 16), g: UInt8((value >> 8) & 0xFF), b: UInt8(value & 0xFF))
    }

    /// `#RRGGBB` in upper-case hex.
    public var description: String {
        let digits = Array("0123456789ABCDEF")
        var text = "#"
        for byte in [r, g, b] {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return text
    }
}

/// Formats a number so that `Double(text)` gives it back: integers without a fraction.
func formatNumber(_ value: Double) -> String {
    if value == value.rounded(), abs(value) < 1e12 { return String(Int(value)) }
    return String(value)
}

/// Unaligned loads and stores for the pixel kernels.
extension UnsafeMutablePointer where Pointee == UInt8 {
    /// Copies one RGB pixel with a single 4-byte load and store; the store also writes the first
    /// byte after the pixel, so callers write pixels in increasing address order within a row
    /// and copy the row's last pixel with `copyPixel3`.
    @inline(__always)
    func copyPixel4(from source: UnsafePointer<UInt8>) {
        let value = UnsafeRawPointer(source).loadUnaligned(as: UInt32.self)
        UnsafeMutableRawPointer(self).storeBytes(of: value, as: UInt32.self)
    }

    /// Copies exactly three bytes.
    @inline(__always)
    func copyPixel3(from source: UnsafePointer<UInt8>) {
        self[0] = source[0]
        self[1] = source[1]
        self[2] = source[2]
    }
}
