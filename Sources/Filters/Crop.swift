/// Keeps the `width`×`height` rectangle whose top-left pixel is (`x`, `y`); it must lie inside the frame.
public struct Crop: Filter, Hashable {
    public var rect: PixelRect

    public init(width: Int, height: Int, x: Int = 0, y: Int = 0) {
        rect = PixelRect(x: x, y: y, width: width, height: height)
    }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        guard rect.isInside(input) else {
            throw .invalidGeometry(filter: description,
                                   reason: "the rectangle \(rect) does not lie inside the \(input) frame")
        }
        return rect.size
    }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        _ = try outputSize(for: input)
        return CropRenderer(rect: rect, inputSize: input)
    }

    public var description: String { "crop \(rect)" }
}

extension Crop: PlanarFilter {
    public func acceptsPlanes(of picture: FrameSize) -> Bool { rect.isEven }

    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        guard rect.isEven, rect.isInside(picture) else { return nil }
        let plane = rect.shifted(by: role.shift)
        return PlaneRectRenderer(inputSize: picture.shifted(by: role.shift), outputSize: plane.size, rect: plane)
    }
}

final class CropRenderer: FilterRenderer {
    let inputSize: FrameSize
    let outputSize: FrameSize
    let rect: PixelRect

    init(rect: PixelRect, inputSize: FrameSize) {
        self.rect = rect
        self.inputSize = inputSize
        self.outputSize = rect.size
    }

    func render(_ source: RGBImage, into destination: RGBImage) {
        let rect = rect
        let bands = Parallel.bandCount(for: rect.height, minimumPerBand: 256)
        Parallel.forEachBand(of: rect.height, bands: bands) { _, rows in
            for v in rows {
                destination.row(v).update(from: source.row(rect.y + v) + 3 * rect.x, count: 3 * rect.width)
            }
        }
    }
}
