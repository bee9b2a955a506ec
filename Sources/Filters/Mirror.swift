/// Mirrors the picture: `.horizontal` swaps left and right (like ffmpeg `hflip`), `.vertical`
/// swaps top and bottom (`vflip`).
public struct Mirror: Filter, D4Representable, Hashable {
    public enum Axis: String, CaseIterable, Sendable {
        case horizontal, vertical
    }

    public enum Parameters {
        public static let axis = ValueParameter<Axis>.choice("axis", default: .horizontal, summary: "which way to flip")
    }

    public var axis: Axis

    public init(axis: Axis = Parameters.axis.defaultValue) {
        self.axis = axis
    }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize { input }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        D4Renderer(transform: d4Transform(for: input)!, inputSize: input)
    }

    func d4Transform(for input: FrameSize) -> D4Transform? {
        D4Transform(transposes: false, flipsX: axis == .horizontal, flipsY: axis == .vertical)
    }

    public var description: String { "mirror \(axis.rawValue)" }
}
