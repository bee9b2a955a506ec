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
