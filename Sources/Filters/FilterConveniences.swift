// Short spellings for composing chains in Swift, matching the CLI's nicknames:
// `[GaussianBlur(sigma: 6), Rotate(.clockwise), Mirror(.horizontal), Scale(fit: .init(1280, 720))]`.

extension Mirror {
    public init(_ axis: Axis) { self.init(axis: axis) }
}

extension Scale {
    /// The largest size inside `box` with the input's aspect.
    public init(fit box: FrameSize, method: Method = Parameters.method.defaultValue) { self.init(.fit(box), method: method) }
    /// Longest side at most `longestSide`; never upscales.
    public init(max longestSide: Int, method: Method = Parameters.method.defaultValue) { self.init(.max(longestSide), method: method) }
}
