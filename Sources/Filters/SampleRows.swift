/// Rows of samples at `base`, `stride` bytes apart, whatever their layout (RGB pixels, one plane).
struct SampleRows: @unchecked Sendable {
    let base: UnsafeMutablePointer<UInt8>
    let stride: Int

    init(base: UnsafeMutablePointer<UInt8>, stride: Int) { (self.base, self.stride) = (base, stride) }
    init(_ image: RGBImage) { self.init(base: image.baseAddress, stride: image.bytesPerRow) }
    init(_ plane: Plane) { self.init(base: plane.base, stride: plane.stride) }

    @inline(__always) func row(_ y: Int) -> UnsafeMutablePointer<UInt8> { base + y * stride }
}
