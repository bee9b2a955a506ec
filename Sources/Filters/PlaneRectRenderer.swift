/// Copies `rect` of the source plane to (x, y) of the destination; the rest of the destination is
/// `fill` (a pad's canvas). A crop is the rectangle at (0, 0) with nothing left to fill.
final class PlaneRectRenderer: PlaneRenderer {
    let inputSize: FrameSize
    let outputSize: FrameSize
    private let rect: PixelRect
    private let x: Int, y: Int
    private let fill: UInt8

    init(inputSize: FrameSize, outputSize: FrameSize, rect: PixelRect, x: Int = 0, y: Int = 0, fill: UInt8 = 0) {
        (self.inputSize, self.outputSize, self.rect, self.x, self.y, self.fill) = (inputSize, outputSize, rect, x, y, fill)
    }

    func render(_ source: Plane, into destination: Plane) {
        let w = outputSize.width
        for v in 0..<outputSize.height {
            let d = destination.row(v)
            guard v >= y, v < y + rect.height else { d.update(repeating: fill, count: w); continue }
            d.update(repeating: fill, count: x)
            (d + x).update(from: source.row(rect.y + v - y) + rect.x, count: rect.width)
            (d + x + rect.width).update(repeating: fill, count: w - x - rect.width)
        }
    }
}
