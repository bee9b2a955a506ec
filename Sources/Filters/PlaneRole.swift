/// Which plane of a 4:2:0 picture a plane renderer works on; chroma planes are half size each way.
public enum PlaneRole: Int, CaseIterable, Sendable {
    case luma, cb, cr

    /// log2 of the subsampling: sizes and positions on this plane are the picture's shifted by it.
    public var shift: Int { self == .luma ? 0 : 1 }
}

extension PixelRect {
    /// Every edge on an even pixel: the rectangle falls on whole 4:2:0 chroma samples.
    var isEven: Bool { x % 2 == 0 && y % 2 == 0 && width % 2 == 0 && height % 2 == 0 }

    func shifted(by shift: Int) -> PixelRect {
        PixelRect(x: x >> shift, y: y >> shift, width: width >> shift, height: height >> shift)
    }
}

extension FrameSize {
    func shifted(by shift: Int) -> FrameSize { FrameSize(width: width >> shift, height: height >> shift) }
}
