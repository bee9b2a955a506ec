/// Composing pictures: contact sheets and side-by-side comparisons.
extension RGBImage {
    /// Copies `image` with its top-left corner at (x, y), clipped to this image.
    public func draw(_ image: RGBImage, atX x: Int, y: Int) {
        let x0 = max(0, x), y0 = max(0, y)
        let x1 = min(width, x + image.width), y1 = min(height, y + image.height)
        guard x1 > x0, y1 > y0 else { return }
        for row in y0..<y1 {
            (self.row(row) + 3 * x0).update(from: image.row(row - y) + 3 * (x0 - x), count: 3 * (x1 - x0))
        }
    }
}

/// The largest size with `size`'s aspect ratio that fits inside `box` (at least 1×1).
public func aspectFit(_ size: FrameSize, in box: FrameSize) -> FrameSize {
    let scale = min(Double(box.width) / Double(size.width), Double(box.height) / Double(size.height))
    return FrameSize(width: max(1, min(box.width, Int((Double(size.width) * scale).rounded()))),
                     height: max(1, min(box.height, Int((Double(size.height) * scale).rounded()))))
}
