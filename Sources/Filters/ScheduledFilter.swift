/// A catalog filter with a timeline: `enable=` ranges, keyframed numeric parameters
/// (`sigma=0@0,12@2`), and for filters that keep the size a region (`region=`, `shape=`,
/// `feather=`) or boxes over time (`track=FILE`, `hold=`). The grammar makes one when a filter is
/// written with any of these; everything else is the plain filter.
public struct ScheduledFilter: Filter, TimeVaryingFilter {
    /// The options' own values: how a region or a track's boxes are shaped.
    public enum Parameters {
        public static let shape = ValueParameter<RegionShape>.choice("shape", default: .rect,
                                                                      summary: "the region's or each track box's outline")
        public static let feather = NumericParameter<Int>("feather", in: 0...512, default: 0,
                                                          summary: "fade the effect out over this many pixels outside the box (the box stays fully covered)")
    }

    /// The options every filter accepts, on top of its own parameters.
    public struct Options: Sendable {
        public var enable: EnableRanges?
        public var region: RegionSpec?
        public var track: Track?
        public var shape = Parameters.shape.defaultValue
        public var feather = Parameters.feather.defaultValue!
        /// The file `track` was read from.
        var trackFile: ChainFile?

        var confined: Bool { region != nil || track != nil }
        var empty: Bool { enable == nil && !confined }
    }

    let definition: FilterDefinition
    /// Every parameter's value at time zero (a keyframed one: its first key).
    let values: [String: ParameterValue]
    let animated: [String: Keyframes]
    /// The arguments as written, `key=text`, for `description`.
    let spelled: [String]
    public let options: Options

    init(definition: FilterDefinition, values: [String: ParameterValue], animated: [String: Keyframes],
         spelled: [String], options: Options) throws(ChainSyntaxError) {
        (self.definition, self.values, self.animated, self.spelled, self.options) = (definition, values, animated, spelled, options)
        // Every keyframe's value must build (the parser checked ranges; this checks combinations).
        _ = try definition.build(values)
        for (key, frames) in animated {
            for sample in frames.samples {
                var v = values
                v[key] = Self.value(sample, like: values[key])
                _ = try definition.build(v)
            }
        }
    }

    public var name: String { definition.name }
    public var description: String { ([definition.name] + spelled).joined(separator: " ") }
    /// Whether the picture can change from one frame to the next with the same input.
    public var isTimeDependent: Bool {
        !animated.isEmpty || options.enable != nil || options.track != nil
            || (build(values) as? any TimeVaryingFilter)?.isTimeDependent == true
    }

    /// The parameters at `seconds` of output time.
    func values(at seconds: Double) -> [String: ParameterValue] {
        guard !animated.isEmpty else { return values }
        var out = values
        for (key, frames) in animated { out[key] = Self.value(frames.value(at: seconds), like: values[key]) }
        return out
    }

    static func value(_ number: Double, like existing: ParameterValue?) -> ParameterValue {
        if case .integer = existing { return .integer(Int(number.rounded())) }
        return .number(number)
    }

    func build(_ values: [String: ParameterValue]) -> (any Filter)? {
        try? definition.build(values)
    }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        guard let filter = build(values) else { throw .invalidGeometry(filter: name, reason: "its parameters do not build") }
        let size = try filter.outputSize(for: input)
        for (key, frames) in animated {
            for sample in frames.samples {
                var v = values
                v[key] = Self.value(sample, like: values[key])
                guard let other = build(v) else { continue }
                let changed = try other.outputSize(for: input)
                if changed != size {
                    throw .invalidGeometry(filter: name, reason: "keyframed \(key) changes the picture's size (\(size) at one key, \(changed) at another); only parameters that keep the size can be keyframed")
                }
            }
        }
        if !options.empty, size != input {
            throw .invalidGeometry(filter: name, reason: "enable=, region= and track= need a filter that keeps the picture's size; this one makes \(size) of \(input)")
        }
        if let region = options.region {
            let rect = region.rect(in: input)
            if Box(x: Double(rect.x), y: Double(rect.y), width: Double(rect.width), height: Double(rect.height)).covered(in: input) == nil || rect.width == 0 || rect.height == 0 {
                throw .invalidGeometry(filter: name, reason: "region=\(region) is empty or outside the \(input) picture")
            }
        }
        return size
    }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        let size = try outputSize(for: input)
        if options.confined { return RegionRenderer(filter: self, size: input) }
        return ScheduledRenderer(filter: self, inputSize: input, outputSize: size)
    }
}

extension ScheduledFilter: ReadsChainFiles {
    var chainFiles: [ChainFile] {
        values.values.compactMap { if case let .file(file) = $0 { file } else { nil } } + (options.trackFile.map { [$0] } ?? [])
    }
}

/// Renderers of one filter at the parameter values seen lately: a keyframed parameter makes a new
/// renderer only when its value changes, and the few most recent are kept for values that come back
/// (a hit moves to the back, the oldest goes when it is full). The same for RGB renderers and for
/// one plane's, each with a region's work area in and out when asked.
final class RendererCache<Renderer, Buffer> {
    struct Entry {
        var values: [String: ParameterValue]
        var size: FrameSize
        var renderer: Renderer
        var input: Buffer?
        var output: Buffer?
    }

    private var entries: [Entry] = []
    private let capacity: Int
    private let make: ([String: ParameterValue], FrameSize) -> Renderer?
    private let sizes: (Renderer) -> (input: FrameSize, output: FrameSize)
    private let buffer: (FrameSize) -> Buffer

    init(capacity: Int, make: @escaping ([String: ParameterValue], FrameSize) -> Renderer?,
         sizes: @escaping (Renderer) -> (input: FrameSize, output: FrameSize), buffer: @escaping (FrameSize) -> Buffer) {
        (self.capacity, self.make, self.sizes, self.buffer) = (capacity, make, sizes, buffer)
    }

    /// The renderer for `values` on a `size` picture (picture pixels), with work buffers if asked.
    func entry(_ values: [String: ParameterValue], size: FrameSize, withBuffers: Bool = false) -> Entry? {
        if let i = entries.lastIndex(where: { $0.size == size && $0.values == values }) {
            let hit = entries.remove(at: i)
            entries.append(hit)
            return hit
        }
        guard let renderer = make(values, size) else { return nil }
        let (input, output) = sizes(renderer)
        let entry = Entry(values: values, size: size, renderer: renderer,
                          input: withBuffers ? buffer(input) : nil, output: withBuffers ? buffer(output) : nil)
        if entries.count == capacity { entries.removeFirst() }
        entries.append(entry)
        return entry
    }
}

extension RendererCache where Renderer == any FilterRenderer, Buffer == RGBImage {
    convenience init(_ filter: ScheduledFilter, capacity: Int) {
        self.init(capacity: capacity, make: { values, size in try? filter.build(values)?.makeRenderer(for: size) },
                  sizes: { ($0.inputSize, $0.outputSize) }, buffer: { RGBImage(size: $0) })
    }
}

extension FilterRenderer {
    /// With the time when the renderer wants it.
    func render(_ source: RGBImage, into destination: RGBImage, time: FrameTime) {
        if let timed = self as? any TimedFilterRenderer {
            timed.render(source, into: destination, at: time)
        } else {
            render(source, into: destination)
        }
    }
}

/// A whole-picture filter with `enable=` or keyframed parameters.
private final class ScheduledRenderer: TimedFilterRenderer {
    let inputSize: FrameSize
    let outputSize: FrameSize
    private let filter: ScheduledFilter
    private let cache: RendererCache<any FilterRenderer, RGBImage>

    init(filter: ScheduledFilter, inputSize: FrameSize, outputSize: FrameSize) {
        (self.filter, self.inputSize, self.outputSize) = (filter, inputSize, outputSize)
        cache = RendererCache(filter, capacity: 4)
    }

    func render(_ source: RGBImage, into destination: RGBImage) { render(source, into: destination, at: .zero) }

    func render(_ source: RGBImage, into destination: RGBImage, at time: FrameTime) {
        if let enable = filter.options.enable, !enable.contains(time.seconds) {
            destination.copyPixels(from: source)
            return
        }
        guard let entry = cache.entry(filter.values(at: time.seconds), size: inputSize) else {
            destination.copyPixels(from: source)
            return
        }
        entry.renderer.render(source, into: destination, time: time)
    }
}

/// Where a confined filter works at a time: its boxes (the region, or the track's boxes then) and
/// each box's work area — the box, its feather and the filter's reach, on the filter's block grid.
/// Shared by the RGB and the plane renderers, so both filter the same places.
final class RegionSchedule {
    let filter: ScheduledFilter
    let picture: FrameSize
    let mask: RegionMask
    /// Work areas on even edges, so they fall on whole 4:2:0 chroma samples (the planes).
    private let evenWork: Bool
    private let fixedBox: PixelRect?
    /// The values last seen, and the reach and block alignment of the filter they make.
    private var context: (values: [String: ParameterValue], reach: Int, alignment: Int)?

    init(filter: ScheduledFilter, picture: FrameSize, evenWork: Bool) {
        (self.filter, self.picture, self.evenWork) = (filter, picture, evenWork)
        mask = RegionMask(shape: filter.options.shape, feather: filter.options.feather)
        fixedBox = filter.options.region.flatMap { region in
            let r = region.rect(in: picture)
            return Box(x: Double(r.x), y: Double(r.y), width: Double(r.width), height: Double(r.height)).covered(in: picture)
        }
    }

    /// The filter's values and its boxes with their work areas at `time`; nil when it is off then.
    func boxes(at time: FrameTime) -> (values: [String: ParameterValue], boxes: [(box: PixelRect, work: PixelRect)])? {
        if let enable = filter.options.enable, !enable.contains(time.seconds) { return nil }
        let boxes: [PixelRect]
        if let track = filter.options.track {
            boxes = track.boxes(at: time.seconds).compactMap { $0.covered(in: picture) }
        } else {
            boxes = fixedBox.map { [$0] } ?? []
        }
        guard !boxes.isEmpty else { return nil }
        let values = filter.values(at: time.seconds)
        // The filter's context only changes with its values: built again only then (a text or an
        // overlay would otherwise open its font or image every picture).
        if context?.values != values {
            guard let built = filter.build(values) else { return nil }
            let regional = built as? any RegionalFilter
            context = (values, regional?.regionReach ?? 0, max(1, regional?.regionAlignment ?? 1))
        }
        guard let (_, reach, alignment) = context else { return nil }
        return (values, boxes.map { box in
            let extent = mask.extent(of: box, in: picture)
            var work = extent.expanded(by: reach, within: picture).aligned(to: alignment, within: picture)
            if evenWork { work = work.aligned(to: 2, within: picture) }
            if alignment == 1 { work = work.quantized(within: picture) }
            return (box, work)
        })
    }
}

/// A filter confined to a region or to a track's boxes: each box is filtered with its context (the
/// filter's reach) and blended back through the region's mask, in place. Cost follows the boxes'
/// area, not the frame's.
private final class RegionRenderer: InPlaceFilterRenderer, TimedFilterRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let schedule: RegionSchedule
    private let cache: RendererCache<any FilterRenderer, RGBImage>

    init(filter: ScheduledFilter, size: FrameSize) {
        inputSize = size
        schedule = RegionSchedule(filter: filter, picture: size, evenWork: false)
        cache = RendererCache(filter, capacity: 8)
    }

    func render(_ source: RGBImage, into destination: RGBImage) { render(source, into: destination, at: .zero) }

    func render(_ source: RGBImage, into destination: RGBImage, at time: FrameTime) {
        destination.copyPixels(from: source)
        renderInPlace(destination, at: time)
    }

    func renderInPlace(_ image: RGBImage, at time: FrameTime) {
        guard let (values, boxes) = schedule.boxes(at: time) else { return }
        for (box, work) in boxes {
            guard let entry = cache.entry(values, size: work.size, withBuffers: true),
                  let input = entry.input, let output = entry.output else { continue }
            for y in 0..<work.height {
                input.row(y).update(from: image.row(work.y + y) + work.x * 3, count: work.width * 3)
            }
            entry.renderer.render(input, into: output, time: time)
            schedule.mask.composite(output, work: work, into: image, box: box)
        }
    }
}
