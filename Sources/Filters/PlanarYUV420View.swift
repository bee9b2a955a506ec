/// Three 8-bit planes of a 4:2:0 picture, `width`×`height` luma samples and ⌈w/2⌉×⌈h/2⌉ chroma
/// samples, rows `…Stride` bytes apart. A view: it does not own the memory (an `AVFrame`'s planes,
/// for example); the caller keeps it alive and unshared while a conversion runs.
///
/// `ownsRowPadding`: the bytes of each row past the picture, up to the stride, are the row's own
/// padding (an `AVFrame`'s planes), which a pass may overwrite: a quarter turn writing the planar
/// chain's output then writes a row's last cache line whole. False for a view into a larger picture.
public struct PlanarYUV420View: @unchecked Sendable {
    public var width: Int
    public var height: Int
    public var y: UnsafeMutablePointer<UInt8>
    public var yStride: Int
    public var u: UnsafeMutablePointer<UInt8>
    public var uStride: Int
    public var v: UnsafeMutablePointer<UInt8>
    public var vStride: Int
    public var ownsRowPadding: Bool

    public init(width: Int, height: Int,
                y: UnsafeMutablePointer<UInt8>, yStride: Int,
                u: UnsafeMutablePointer<UInt8>, uStride: Int,
                v: UnsafeMutablePointer<UInt8>, vStride: Int, ownsRowPadding: Bool = false) {
        precondition(width > 0 && height > 0, "PlanarYUV420View needs a positive size, got \(width)x\(height)")
        self.width = width
        self.height = height
        self.y = y; self.yStride = yStride
        self.u = u; self.uStride = uStride
        self.v = v; self.vStride = vStride
        self.ownsRowPadding = ownsRowPadding
    }

    public var chromaWidth: Int { (width + 1) / 2 }
    public var chromaHeight: Int { (height + 1) / 2 }
}

extension PlanarYUV420View {
    /// Y, Cb, Cr as planes.
    var planes: [Plane] {
        [Plane(base: y, width: width, height: height, stride: yStride, ownsRowPadding: ownsRowPadding),
         Plane(base: u, width: chromaWidth, height: chromaHeight, stride: uStride, ownsRowPadding: ownsRowPadding),
         Plane(base: v, width: chromaWidth, height: chromaHeight, stride: vStride, ownsRowPadding: ownsRowPadding)]
    }
}
