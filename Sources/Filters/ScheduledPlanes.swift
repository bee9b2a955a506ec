// A filter with a timeline runs on the planes when the filter it builds does, at every value its
// keyframes take: `enable=` picks the filter or the picture as it is, and a region or a track blends
// the filtered work area back through the region's mask (per pixel on luma, with the 2×2 block's
// mean alpha on chroma: a weighted sum with weights adding up to one, so it commutes with Y′CbCr ↔ RGB).

extension ScheduledFilter: PlanarFilter {
    /// Every filter its values and keyframes build runs on the planes.
    public func acceptsPlanes(of picture: FrameSize) -> Bool {
        var all = [values]
        for (key, frames) in animated {
            for sample in frames.samples {
                var v = values
                v[key] = Self.value(sample, like: values[key])
                all.append(v)
            }
        }
        return all.allSatisfy { v in
            guard let planar = build(v) as? any PlanarFilter else { return false }
            // A region's work areas are even-sized parts of the picture; the picture decides.
            return planar.acceptsPlanes(of: picture)
        }
    }

    public var drawsInPlace: Bool { options.confined }

    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        guard acceptsPlanes(of: picture) else { return nil }
        let cache = PlaneRendererCache(self, role: role, color: color, capacity: options.confined ? 8 : 4)
        if options.confined { return RegionPlaneRenderer(filter: self, picture: picture, role: role, cache: cache) }
        return ScheduledPlaneRenderer(filter: self, size: picture.shifted(by: role.shift), picture: picture, cache: cache)
    }
}

/// Plane renderers of one filter at the values seen lately (as `RendererCache` on RGB), each with
/// a work area's input and output planes when a region asks for them.
private final class PlaneRendererCache {
    struct Entry {
        var values: [String: ParameterValue]
        var picture: FrameSize
        var renderer: any PlaneRenderer
        var input: PlaneBuffer?
        var output: PlaneBuffer?
    }

    private var entries: RecentEntries<Entry>
    private let filter: ScheduledFilter
    private let role: PlaneRole
    private let color: YUVConverter

    init(_ filter: ScheduledFilter, role: PlaneRole, color: YUVConverter, capacity: Int) {
        (self.filter, self.role, self.color) = (filter, role, color)
        entries = RecentEntries(capacity: capacity)
    }

    /// The renderer for a `picture`-sized (work) picture, in picture pixels.
    func entry(_ values: [String: ParameterValue], picture: FrameSize, withBuffers: Bool = false) -> Entry? {
        if let hit = entries.use(where: { $0.picture == picture && $0.values == values }) { return hit }
        guard let planar = filter.build(values) as? any PlanarFilter,
              let renderer = planar.makePlaneRenderer(picture: picture, role: role, color: color) else { return nil }
        let entry = Entry(values: values, picture: picture, renderer: renderer,
                          input: withBuffers ? PlaneBuffer(size: renderer.inputSize) : nil,
                          output: withBuffers ? PlaneBuffer(size: renderer.outputSize) : nil)
        entries.add(entry)
        return entry
    }
}

extension PlaneRenderer {
    /// With the time when the renderer wants it.
    func render(_ source: Plane, into destination: Plane, time: FrameTime) {
        if let timed = self as? any TimedPlaneRenderer {
            timed.render(source, into: destination, at: time)
        } else if let drawing = self as? any InPlacePlaneRenderer {
            for y in 0..<source.height { destination.row(y).update(from: source.row(y), count: source.width) }
            drawing.renderInPlace(destination, at: time)
        } else {
            render(source, into: destination)
        }
    }
}

/// A whole-picture filter with `enable=` or keyframed parameters, on one plane.
private final class ScheduledPlaneRenderer: TimedPlaneRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let filter: ScheduledFilter
    private let picture: FrameSize
    private let cache: PlaneRendererCache

    init(filter: ScheduledFilter, size: FrameSize, picture: FrameSize, cache: PlaneRendererCache) {
        (self.filter, inputSize, self.picture, self.cache) = (filter, size, picture, cache)
    }

    func render(_ source: Plane, into destination: Plane) { render(source, into: destination, at: .zero) }

    func render(_ source: Plane, into destination: Plane, at time: FrameTime) {
        if filter.options.enable.map({ $0.contains(time.seconds) }) != false,
           let entry = cache.entry(filter.values(at: time.seconds), picture: picture) {
            entry.renderer.render(source, into: destination, time: time)
            return
        }
        for y in 0..<source.height { destination.row(y).update(from: source.row(y), count: source.width) }
    }
}

/// A filter confined to a region or a track's boxes, on one plane, in place: each box's work area
/// (even, so it falls on whole chroma samples) is filtered and blended back through the mask.
private final class RegionPlaneRenderer: InPlacePlaneRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let schedule: RegionSchedule
    private let role: PlaneRole
    private let cache: PlaneRendererCache

    init(filter: ScheduledFilter, picture: FrameSize, role: PlaneRole, cache: PlaneRendererCache) {
        (self.role, self.cache) = (role, cache)
        inputSize = picture.shifted(by: role.shift)
        schedule = RegionSchedule(filter: filter, picture: picture, evenWork: true)
    }

    func renderInPlace(_ plane: Plane, at time: FrameTime) {
        guard let (values, boxes) = schedule.boxes(at: time) else { return }
        let picture = schedule.picture
        for (box, work) in boxes {
            guard let entry = cache.entry(values, picture: work.size, withBuffers: true),
                  let input = entry.input?.plane, let output = entry.output?.plane else { continue }
            let area = work.shifted(by: role.shift)
            for y in 0..<area.height {
                input.row(y).update(from: plane.row(area.y + y) + area.x, count: area.width)
            }
            entry.renderer.render(input, into: output, time: time)
            if role == .luma {
                schedule.mask.composite(SampleRows(output), work: work, into: SampleRows(plane), size: picture, channels: 1, box: box)
            } else {
                schedule.mask.compositeChroma(SampleRows(output), work: area, into: SampleRows(plane), picture: picture, box: box)
            }
        }
    }
}
