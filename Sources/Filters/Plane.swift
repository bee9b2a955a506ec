/// One 8-bit plane: `width`×`height` samples, rows `stride` bytes apart. A view: it does not own
/// the memory (an `AVFrame`'s plane or a `PlaneBuffer`). `ownsRowPadding`: a row's bytes past
/// `width`, up to `stride`, are its own padding, which a pass may overwrite (`PlanarYUV420View`).
public struct Plane: @unchecked Sendable {
    public var base: UnsafeMutablePointer<UInt8>
    public var width: Int
    public var height: Int
    public var stride: Int
    public var ownsRowPadding: Bool

    public init(base: UnsafeMutablePointer<UInt8>, width: Int, height: Int, stride: Int, ownsRowPadding: Bool = false) {
        (self.base, self.width, self.height, self.stride, self.ownsRowPadding) = (base, width, height, stride, ownsRowPadding)
    }

    public var size: FrameSize { FrameSize(width: width, height: height) }
    @inline(__always) func row(_ y: Int) -> UnsafeMutablePointer<UInt8> { base + y * stride }

    /// Copies `source`'s samples (the same size) into this plane.
    func copyPixels(from source: Plane) {
        for y in 0..<source.height { row(y).update(from: source.row(y), count: source.width) }
    }
}

/// An 8-bit plane that owns its memory; rows 64-byte aligned, with a spare row for vector reads.
final class PlaneBuffer {
    let plane: Plane

    init(size: FrameSize) {
        let stride = (size.width + 63) / 64 * 64
        let count = stride * (size.height + 1)
        let raw = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 64)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: count)
        plane = Plane(base: raw.bindMemory(to: UInt8.self, capacity: count), width: size.width, height: size.height, stride: stride,
                      ownsRowPadding: true)
    }

    deinit { UnsafeMutableRawPointer(plane.base).deallocate() }
}
