/// Places the picture on a larger canvas of one colour, centred (letterbox or pillarbox).
public struct Pad: Filter, Hashable {
    public var width: Int
    public var height: Int
    public var fill: RGBColor

    public init(width: Int, height: Int, fill: RGBColor = .black) {
        self.width = width
        self.height = height
        self.fill = fill
    }

    public var description: String { "pad \(width)x\(height)" }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        guard width >= input.width, height >= input.height else {
            throw .invalidGeometry(filter: description, reason: "the canvas \(width)x\(height) is smaller than the frame \(input)")
        }
        return FrameSize(width: width, height: height)
    }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        PadRenderer(inputSize: input, outputSize: try outputSize(for: input), fill: fill)
    }
}

extension Pad: PlanarFilter {
    /// Where the picture sits on the canvas (centred), or nil when the canvas is smaller.
    func offsets(for input: FrameSize) -> (x: Int, y: Int)? {
        guard width >= input.width, height >= input.height else { return nil }
        return ((width - input.width) / 2, (height - input.height) / 2)
    }

    public func acceptsPlanes(of picture: FrameSize) -> Bool {
        guard let offset = offsets(for: picture) else { return false }
        return offset.x % 2 == 0 && offset.y % 2 == 0 && width % 2 == 0 && height % 2 == 0
    }

    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        guard acceptsPlanes(of: picture), let offset = offsets(for: picture) else { return nil }
        let samples = color.samples(of: fill)
        let value = role == .luma ? samples.y : role == .cb ? samples.cb : samples.cr
        let input = picture.shifted(by: role.shift)
        return PlaneRectRenderer(inputSize: input, outputSize: FrameSize(width: width, height: height).shifted(by: role.shift),
                                 rect: PixelRect(x: 0, y: 0, width: input.width, height: input.height),
                                 x: offset.x >> role.shift, y: offset.y >> role.shift, fill: value)
    }
}

private final class PadRenderer: FilterRenderer {
    let inputSize: FrameSize
    let outputSize: FrameSize
    let fill: RGBColor

    init(inputSize: FrameSize, outputSize: FrameSize, fill: RGBColor) {
        self.inputSize = inputSize
        self.outputSize = outputSize
        self.fill = fill
    }

    func render(_ source: RGBImage, into destination: RGBImage) {
        destination.fill(r: fill.r, g: fill.g, b: fill.b)
        destination.draw(source, atX: (outputSize.width - inputSize.width) / 2, y: (outputSize.height - inputSize.height) / 2)
    }
}
