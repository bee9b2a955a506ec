// TEMPORARY: stand-ins until the Filters branch lands. Deleted at merge.
public struct ChainSyntaxError: Error, CustomStringConvertible, Equatable, Sendable {
    public var description: String
}

public struct FilterChain: Sendable, CustomStringConvertible {
    public var filters: [any Filter]
    public init(_ filters: [any Filter] = []) { self.filters = filters }
    public init(parsing text: String) throws(ChainSyntaxError) {
        filters = []
        for part in text.split(separator: "|") {
            let words = part.split(separator: " ")
            guard let name = words.first else { continue }
            switch name {
            case "rotate": filters.append(Rotate(quarterTurns: (Int(words.dropFirst().first ?? "90") ?? 90) / 90))
            default: throw ChainSyntaxError(description: "unknown filter '\(name)'")
            }
        }
    }
    public init(parsingFile text: String) throws(ChainSyntaxError) {
        try self.init(parsing: text.split(separator: "\n").filter { !$0.hasPrefix("#") }.joined(separator: "|"))
    }
    public var isEmpty: Bool { filters.isEmpty }
    public var description: String { filters.map(\.description).joined(separator: " | ") }
    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        var s = input
        for f in filters { s = try f.outputSize(for: s) }
        return s
    }
}

public struct Rotate: Filter {
    public var quarterTurns: Int
    public init(degrees: Double) { self.init(quarterTurns: Int(degrees / 90)) }
    public init(quarterTurns: Int) { self.quarterTurns = ((quarterTurns % 4) + 4) % 4 }
    public var description: String { "rotate \(quarterTurns * 90)" }
    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize { quarterTurns % 2 == 1 ? input.swapped : input }
    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer { R(q: quarterTurns, inputSize: input) }
    final class R: FilterRenderer {
        let q: Int; let inputSize: FrameSize
        init(q: Int, inputSize: FrameSize) { self.q = q; self.inputSize = inputSize }
        var outputSize: FrameSize { q % 2 == 1 ? inputSize.swapped : inputSize }
        func render(_ s: RGBImage, into d: RGBImage) {
            for y in 0..<s.height { for x in 0..<s.width {
                let p = s[x, y]
                switch q {
                case 1: d[s.height - 1 - y, x] = p
                case 2: d[s.width - 1 - x, s.height - 1 - y] = p
                case 3: d[y, s.width - 1 - x] = p
                default: d[x, y] = p
                }
            } }
        }
    }
}

public final class ChainRenderer {
    let renderers: [any FilterRenderer]
    var buffers: [RGBImage]
    public let outputSize: FrameSize
    public init(chain: FilterChain, inputSize: FrameSize) throws(FilterError) {
        var size = inputSize
        var rs: [any FilterRenderer] = []
        var bs: [RGBImage] = []
        for f in chain.filters {
            let r = try f.makeRenderer(for: size)
            rs.append(r); size = r.outputSize; bs.append(RGBImage(size: size))
        }
        renderers = rs; buffers = bs; outputSize = size
    }
    public func render(_ source: RGBImage) -> RGBImage {
        var current = source
        for (i, r) in renderers.enumerated() { r.render(current, into: buffers[i]); current = buffers[i] }
        return current
    }
}

public struct Scale: Filter {
    public var width: Int, height: Int
    public init(width: Int, height: Int) { self.width = width; self.height = height }
    public var description: String { "scale \(width)x\(height)" }
    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize { FrameSize(width, height) }
    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer { R(inputSize: input, outputSize: FrameSize(width, height)) }
    final class R: FilterRenderer {
        let inputSize: FrameSize, outputSize: FrameSize
        init(inputSize: FrameSize, outputSize: FrameSize) { self.inputSize = inputSize; self.outputSize = outputSize }
        func render(_ s: RGBImage, into d: RGBImage) {
            for y in 0..<d.height { for x in 0..<d.width { d[x, y] = s[x * s.width / d.width, y * s.height / d.height] } }
        }
    }
}
public struct RGBColor: Hashable, Sendable {
    public var r: UInt8, g: UInt8, b: UInt8
    public init(r: UInt8, g: UInt8, b: UInt8) { self.r = r; self.g = g; self.b = b }
    public static let black = RGBColor(r: 0, g: 0, b: 0)
}
public struct Crop: Filter {
    public var width: Int, height: Int, x: Int, y: Int
    public init(width: Int, height: Int, x: Int = 0, y: Int = 0) { self.width = width; self.height = height; self.x = x; self.y = y }
    public var description: String { "crop" }
    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize { FrameSize(width, height) }
    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer { fatalError() }
}
public struct Mirror: Filter {
    public enum Axis: String, Sendable { case horizontal, vertical }
    public var axis: Axis
    public init(axis: Axis = .horizontal) { self.axis = axis }
    public var description: String { "mirror" }
    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize { input }
    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer { fatalError() }
}
extension Scale {
    public enum Mode: Hashable, Sendable { case exact(FrameSize), fit(FrameSize), width(Int), height(Int), max(Int) }
    public init(_ mode: Mode) { self.init(width: 2, height: 2) }
}
