/// Full-range Y′CbCr samples (JPEG's 0…255) as limited-range ones (16…235 luma, 16…240 chroma): a
/// change of how the picture is written, not of the picture, so on RGB it does nothing. The planar
/// chain runs it first on a full-range picture (yuvj420p), so every filter after it and the encoder
/// see limited range, as the RGB path gives them. Not a user's filter: the plan adds it.
struct RangeToLimited: PlanarFilter {
    var description: String { "range" }

    func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize { input }

    func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer { CopyRenderer(size: input) }

    func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        PlaneOperationRenderer(size: picture.shifted(by: role.shift), operation: .table(Self.table(role)))
    }

    /// Y′ → 16 + Y′·219/255, C → 128 + (C − 128)·224/255, rounded.
    static func table(_ role: PlaneRole) -> [UInt8] {
        (0..<256).map { v in
            let x = Double(v)
            return UInt8((role == .luma ? 16 + x * 219 / 255 : 128 + (x - 128) * 224 / 255).rounded())
        }
    }
}
