/// A fused run of mirrors and quarter turns, as a planar pass.
struct PlanarMoveFilter: PlanarFilter {
    let move: PlanarMove
    func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize { move.outputSize(for: input) }
    func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        D4Renderer(transform: move.transform, inputSize: input)
    }
    func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        PlaneMoveRenderer(move: move, inputSize: picture.shifted(by: role.shift))
    }
    var description: String { "move" }
}

final class PlaneMoveRenderer: StreamingPlaneRenderer {
    let inputSize: FrameSize
    let outputSize: FrameSize
    private let move: PlanarMove
    var streamsOutput = false

    init(move: PlanarMove, inputSize: FrameSize) {
        self.move = move
        self.inputSize = inputSize
        outputSize = move.outputSize(for: inputSize)
    }

    func render(_ source: Plane, into destination: Plane) {
        move.apply(source.base, sourceStride: source.stride, size: inputSize, into: destination.base, destinationStride: destination.stride,
                   streaming: streamsOutput, ownsRowPadding: destination.ownsRowPadding)
    }
}
