extension ColorDescription {
    /// BT.709 limited range, the tags of HD video and of livefilter's synthetic test streams.
    public static let bt709 = ColorDescription(matrix: 1, primaries: 1, transfer: 1, isFullRange: false)
}
