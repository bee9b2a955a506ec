/// Width and height of a frame in pixels.
public struct FrameSize: Hashable, Sendable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    public init(_ width: Int, _ height: Int) {
        self.init(width: width, height: height)
    }

    public var pixelCount: Int { width * height }
    public var swapped: FrameSize { FrameSize(width: height, height: width) }
    public var description: String { "\(width)x\(height)" }
}

/// A packed 8-bit RGB image (R, G, B per pixel, no alpha) that owns its memory.
///
/// Rows start `bytesPerRow` apart; rows are padded to 64 bytes so SIMD loads of a row never
/// straddle the next one and each row starts on a cache line.
/// One owner at a time: it is `@unchecked Sendable` so it can move between pipeline stages.
public final class RGBImage: @unchecked Sendable {
    public static let bytesPerPixel = 3
    public static let rowAlignment = 64

    public let width: Int
    public let height: Int
    public let bytesPerRow: Int
    /// The first byte of row 0. Valid for the lifetime of the image.
    public let baseAddress: UnsafeMutablePointer<UInt8>

    public var size: FrameSize { FrameSize(width: width, height: height) }

    /// A zero-filled (black) image.
    public init(width: Int, height: Int) {
        precondition(width > 0 && height > 0, "RGBImage needs a positive size, got \(width)x\(height)")
        self.width = width
        self.height = height
        let row = width * Self.bytesPerPixel
        self.bytesPerRow = (row + Self.rowAlignment - 1) / Self.rowAlignment * Self.rowAlignment
        // Extra row of slack lets vector kernels read a little past the last pixel safely.
        let byteCount = bytesPerRow * (height + 1)
        let raw = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: Self.rowAlignment)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: byteCount)
        self.baseAddress = raw.bindMemory(to: UInt8.self, capacity: byteCount)
    }

    public convenience init(size: FrameSize) {
        self.init(width: size.width, height: size.height)
    }

    deinit {
        UnsafeMutableRawPointer(baseAddress).deallocate()
    }

    /// The first byte of row `y`.
    @inline(__always)
    public func row(_ y: Int) -> UnsafeMutablePointer<UInt8> {
        baseAddress + y * bytesPerRow
    }

    /// The pixel at (x, y) as (r, g, b).
    public subscript(x: Int, y: Int) -> (r: UInt8, g: UInt8, b: UInt8) {
        get {
            let p = row(y) + x * 3
            return (p[0], p[1], p[2])
        }
        set {
            let p = row(y) + x * 3
            p[0] = newValue.r; p[1] = newValue.g; p[2] = newValue.b
        }
    }

    /// Fills every pixel with one colour.
    public func fill(r: UInt8, g: UInt8, b: UInt8) {
        for y in 0..<height {
            let p = row(y)
            for x in 0..<width {
                p[3 * x] = r; p[3 * x + 1] = g; p[3 * x + 2] = b
            }
        }
    }

    /// Copies the pixels of `other`, which must have the same size.
    public func copyPixels(from other: RGBImage) {
        precondition(other.size == size, "copyPixels needs equal sizes: \(other.size) vs \(size)")
        for y in 0..<height {
            row(y).update(from: other.row(y), count: width * 3)
        }
    }

    /// The pixels as tightly packed rows (width * 3 bytes per row), e.g. for hashing or comparing.
    public func packedBytes() -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(width * height * 3)
        for y in 0..<height {
            out.append(contentsOf: UnsafeBufferPointer(start: row(y), count: width * 3))
        }
        return out
    }

    /// Builds an image from tightly packed RGB rows.
    public convenience init(width: Int, height: Int, packed: [UInt8]) {
        precondition(packed.count == width * height * 3, "packed RGB has \(packed.count) bytes, expected \(width * height * 3)")
        self.init(width: width, height: height)
        packed.withUnsafeBufferPointer { src in
            for y in 0..<height {
                row(y).update(from: src.baseAddress! + y * width * 3, count: width * 3)
            }
        }
    }
}
