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
        let cache = RendererCache<any PlaneRenderer, PlaneBuffer>(self, role: role, color: color, capacity: options.confined ? 8 : 4)
        if options.confined { return RegionPlaneRenderer(filter: self, picture: picture, role: role, cache: cache) }
        return ScheduledPlaneRenderer(filter: self, size: picture.shifted(by: role.shift), picture: picture, cache: cache)
    }
}

extension RendererCache where Renderer == any PlaneRenderer, Buffer == PlaneBuffer {
    /// `role`'s plane renderers; sizes are the (work) picture's, in picture pixels.
    convenience init(_ filter: ScheduledFilter, role: PlaneRole, color: YUVConverter, capacity: Int) {
        self.init(capacity: capacity, make: { values, picture in
            (filter.build(values) as? any PlanarFilter)?.makePlaneRenderer(picture: picture, role: role, color: color)
        }, sizes: { ($0.inputSize, $0.outputSize) }, buffer: { PlaneBuffer(size: $0) })
    }
}

extension PlaneRenderer {
    /// With the time when the renderer wants it.
    func render(_ source: Plane, into destination: Plane, time: FrameTime) {
        if let timed = self as? any TimedPlaneRenderer {
            timed.render(source, into: destination, at: time)
        } else if let drawing = self as? any InPlacePlaneRenderer {
            drawing.render(source, into: destination, at: time)
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
    private let cache: RendererCache<any PlaneRenderer, PlaneBuffer>

    init(filter: ScheduledFilter, size: FrameSize, picture: FrameSize, cache: RendererCache<any PlaneRenderer, PlaneBuffer>) {
        (self.filter, inputSize, self.picture, self.cache) = (filter, size, picture, cache)
    }

    func render(_ source: Plane, into destination: Plane) { render(source, into: destination, at: .zero) }

    func render(_ source: Plane, into destination: Plane, at time: FrameTime) {
        if filter.options.enable.map({ $0.contains(time.seconds) }) != false,
           let entry = cache.entry(filter.values(at: time.seconds), size: picture) {
            entry.renderer.render(source, into: destination, time: time)
            return
        }
        destination.copyPixels(from: source)
    }
}

/// A filter confined to a region or a track's boxes, on one plane, in place: each box's work area
/// (even, so it falls on whole chroma samples) is filtered and blended back through the mask.
private final class RegionPlaneRenderer: InPlacePlaneRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let schedule: RegionSchedule
    private let role: PlaneRole
    private let cache: RendererCache<any PlaneRenderer, PlaneBuffer>

    init(filter: ScheduledFilter, picture: FrameSize, role: PlaneRole, cache: RendererCache<any PlaneRenderer, PlaneBuffer>) {
        (self.role, self.cache) = (role, cache)
        inputSize = picture.shifted(by: role.shift)
        schedule = RegionSchedule(filter: filter, picture: picture, evenWork: true)
    }

    func renderInPlace(_ plane: Plane, at time: FrameTime) {
        guard let (values, boxes) = schedule.boxes(at: time) else { return }
        let picture = schedule.picture
        for (box, work) in boxes {
            guard let entry = cache.entry(values, size: work.size, withBuffers: true),
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
