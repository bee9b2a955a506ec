import Dispatch

/// An ordered list of filters, written in the chain grammar as `filter ('|' filter)*` with
/// `filter := name arg*` and `arg := value | key=value` (see `FilterCatalog.definitions`).
public struct FilterChain: Sendable, CustomStringConvertible {
    public var filters: [any Filter]

    public init(_ filters: [any Filter] = []) {
        self.filters = filters
    }

    /// Parses the one-line form, e.g. `scale fit=1280x720 | blur 6 | rotate 90`. Blank text is the empty chain.
    public init(parsing text: String) throws(ChainSyntaxError) {
        filters = []
        guard text.contains(where: { !$0.isWhitespace }) else { return }
        for (index, part) in text.split(separator: "|", omittingEmptySubsequences: false).enumerated() {
            let tokens = part.split(whereSeparator: \.isWhitespace)
            guard !tokens.isEmpty else { throw .emptyFilter(position: index + 1) }
            filters.append(try FilterCatalog.parseFilter(tokens))
        }
    }

    /// Parses the file form: one filter per line (or several joined by `|`), `#` starts a comment,
    /// blank lines are ignored. Errors say which line.
    public init(parsingFile text: String) throws(ChainSyntaxError) {
        filters = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            guard content.contains(where: { !$0.isWhitespace }) else { continue }
            do {
                filters += try FilterChain(parsing: String(content)).filters
            } catch {
                throw .onLine(number + 1, error)
            }
        }
    }

    public var isEmpty: Bool { filters.isEmpty }

    /// The output size of the whole chain for `input`; throws at the first filter that cannot apply.
    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        var size = input
        for filter in filters { size = try filter.outputSize(for: size) }
        return size
    }

    /// The chain in the grammar; `FilterChain(parsing: chain.description)` gives it back.
    public var description: String { filters.map(\.description).joined(separator: " | ") }
}

/// Renders a chain for one stream of frames of a fixed size. Runs of mirrors and quarter turns are
/// fused into one exact D4 pass; buffers are allocated once, here.
public final class ChainRenderer {
    public let inputSize: FrameSize
    public let outputSize: FrameSize
    private let stages: [(renderer: any FilterRenderer, output: RGBImage)]
    /// One name per pass: the filter as written, or a fused run's filters joined by " + ".
    public let passNames: [String]
    /// With `measuresPasses` on, the wall time each pass has taken so far, in nanoseconds.
    public private(set) var passNanoseconds: [UInt64]
    /// Off by default: then `render` reads no clock.
    public var measuresPasses = false

    public init(chain: FilterChain, inputSize: FrameSize) throws(FilterError) {
        self.inputSize = inputSize
        var renderers: [any FilterRenderer] = []
        var names: [String] = []
        var size = inputSize
        var pending: MoveRun?
        func flush() {
            if let p = pending, !p.transform.isIdentity {
                renderers.append(D4Renderer(transform: p.transform, inputSize: p.input))
                names.append(p.name)
            }
            pending = nil
        }
        for filter in chain.filters {
            if let next = MoveRun.fold(filter, at: size, into: &pending) {
                size = next
                continue
            }
            flush()
            let renderer = try filter.makeRenderer(for: size)
            renderers.append(renderer)
            names.append(filter.description)
            size = renderer.outputSize
        }
        flush()
        outputSize = size
        // Ping-pong: a stage reuses the buffer of the stage before the previous one when sizes match.
        var stages: [(renderer: any FilterRenderer, output: RGBImage)] = []
        for (index, renderer) in renderers.enumerated() {
            let reusable = index >= 2 ? stages[index - 2].output : nil
            let output = reusable?.size == renderer.outputSize ? reusable! : RGBImage(size: renderer.outputSize)
            stages.append((renderer, output))
        }
        self.stages = stages
        passNames = names
        passNanoseconds = Array(repeating: 0, count: stages.count)
    }

    /// Filters `source` (sized `inputSize`). The result is owned by the renderer and valid until
    /// the next call; with no stages it is `source` itself.
    public func render(_ source: RGBImage) -> RGBImage {
        precondition(source.size == inputSize, "ChainRenderer made for \(inputSize), got \(source.size)")
        var current = source
        for (index, stage) in stages.enumerated() {
            let start = measuresPasses ? DispatchTime.now().uptimeNanoseconds : 0
            stage.renderer.render(current, into: stage.output)
            if measuresPasses { passNanoseconds[index] += DispatchTime.now().uptimeNanoseconds - start }
            current = stage.output
        }
        return current
    }

    /// How many passes a frame goes through (fused D4 runs count once).
    public var passCount: Int { stages.count }
}
