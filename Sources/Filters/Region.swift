/// Where a filter works: `region=x,y,w,h` in pixels or percent of the picture entering the filter,
/// with `shape=rect|ellipse` and `feather=PX`. The box itself is always fully covered; a feather
/// fades the effect out over PX pixels *outside* it, so a privacy blur never shows an edge of what
/// it hides.
public struct RegionSpec: Sendable, Equatable, CustomStringConvertible {
    public enum Coordinate: Sendable, Equatable, CustomStringConvertible {
        case pixels(Int)
        case percent(Double)

        func resolve(_ extent: Int) -> Int {
            switch self {
            case let .pixels(p): p
            case let .percent(p): Int((p / 100 * Double(extent)).rounded())
            }
        }

        public var description: String {
            switch self {
            case let .pixels(p): "\(p)"
            case let .percent(p): "\(formatNumber(p))%"
            }
        }

        static func parse(_ text: Substring) -> Coordinate? {
            if text.hasSuffix("%") {
                guard let p = Double(text.dropLast()), p.isFinite, (0...100).contains(p) else { return nil }
                return .percent(p)
            }
            guard let p = Int(text), (0...FilterCatalog.maxSide).contains(p) else { return nil }
            return .pixels(p)
        }
    }

    public var x, y, width, height: Coordinate

    public init(x: Coordinate, y: Coordinate, width: Coordinate, height: Coordinate) {
        (self.x, self.y, self.width, self.height) = (x, y, width, height)
    }

    static func parse(_ text: String) -> RegionSpec? {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 4, let x = Coordinate.parse(parts[0]), let y = Coordinate.parse(parts[1]),
              let w = Coordinate.parse(parts[2]), let h = Coordinate.parse(parts[3]) else { return nil }
        return RegionSpec(x: x, y: y, width: w, height: h)
    }

    /// The rectangle in a `size` picture, unclipped.
    public func rect(in size: FrameSize) -> PixelRect {
        PixelRect(x: x.resolve(size.width), y: y.resolve(size.height),
                  width: width.resolve(size.width), height: height.resolve(size.height))
    }

    public var description: String { "\(x),\(y),\(width),\(height)" }
}

/// The outline of a region.
public enum RegionShape: String, CaseIterable, Sendable {
    case rect, ellipse
}

/// A box in picture coordinates with fractional edges (a track's interpolated box).
public struct Box: Sendable, Equatable {
    public var x, y, width, height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        (self.x, self.y, self.width, self.height) = (x, y, width, height)
    }

    /// The whole pixels it touches (rounded outwards: a redaction covers every partly covered
    /// pixel), clipped to `size`; nil when nothing is left.
    func covered(in size: FrameSize) -> PixelRect? {
        let x0 = max(0, Int((x).rounded(.down))), y0 = max(0, Int((y).rounded(.down)))
        let x1 = min(size.width, Int((x + width).rounded(.up))), y1 = min(size.height, Int((y + height).rounded(.up)))
        guard x1 > x0, y1 > y0 else { return nil }
        return PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }
}

/// How far a filter reads around a pixel, so a region is filtered with the picture around it as
/// context rather than with its edge clamped, and the block grid a filter's look depends on
/// (a mosaic's blocks stay on the frame's grid while a box moves, so they do not shimmer).
public protocol RegionalFilter: Filter {
    /// Pixels of context the filter reads on each side.
    var regionReach: Int { get }
    /// The region's work area is widened to multiples of this, from the picture's top-left.
    var regionAlignment: Int { get }
}

extension RegionalFilter {
    public var regionAlignment: Int { 1 }
}

extension PixelRect {
    var maxX: Int { x + width }
    var maxY: Int { y + height }

    /// Grown by `by` on each side, clipped to `size`.
    func expanded(by amount: Int, within size: FrameSize) -> PixelRect {
        let x0 = max(0, x - amount), y0 = max(0, y - amount)
        let x1 = min(size.width, maxX + amount), y1 = min(size.height, maxY + amount)
        return PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }

    /// Rounded up to multiples of 32 (moved inwards at the picture's edge), so a region's box that
    /// grows or shrinks a little reuses its renderer.
    func quantized(within size: FrameSize) -> PixelRect {
        func fit(_ start: Int, _ length: Int, _ extent: Int) -> (Int, Int) {
            let rounded = min(extent, (length + 31) / 32 * 32)
            return (min(start, extent - rounded), rounded)
        }
        let (x, w) = fit(x, width, size.width), (y, h) = fit(y, height, size.height)
        return PixelRect(x: x, y: y, width: w, height: h)
    }

    /// Widened outwards to multiples of `step` from the origin, clipped to `size`.
    func aligned(to step: Int, within size: FrameSize) -> PixelRect {
        guard step > 1 else { return self }
        let x0 = x / step * step, y0 = y / step * step
        let x1 = min(size.width, (maxX + step - 1) / step * step), y1 = min(size.height, (maxY + step - 1) / step * step)
        return PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }
}

/// Blends a filtered work area back into a picture through a region's mask. Cost is the box's area
/// plus its feather, never the frame's.
struct RegionMask {
    var shape: RegionShape
    var feather: Int

    /// The pixels the mask can touch for `box`: the box and its feather, clipped.
    func extent(of box: PixelRect, in size: FrameSize) -> PixelRect {
        box.expanded(by: feather, within: size)
    }

    /// Writes `filtered` (whose top-left pixel is `work`'s) into `image` inside `box` and its feather.
    func composite(_ filtered: RGBImage, work: PixelRect, into image: RGBImage, box: PixelRect) {
        composite(SampleRows(filtered), work: work, into: SampleRows(image), size: image.size, channels: 3, box: box)
    }

    /// The same for rows of `channels`-sample pixels (RGB: 3; a luma plane: 1).
    func composite(_ filtered: SampleRows, work: PixelRect, into image: SampleRows, size: FrameSize, channels: Int, box: PixelRect) {
        let area = extent(of: box, in: size)
        for y in area.y..<area.maxY {
            let destination = image.row(y), source = filtered.row(y - work.y) - work.x * channels
            // The span of full coverage on this row: copied; the rest of the row's extent is blended.
            let full = fullSpan(y, box: box, area: area)
            if !full.isEmpty {
                (destination + full.lowerBound * channels).update(from: source + full.lowerBound * channels, count: full.count * channels)
            }
            guard feather > 0 || shape == .ellipse else { continue }
            for x in area.x..<area.maxX where !full.contains(x) {
                let alpha = self.alpha(x, y, box: box)
                guard alpha > 0 else { continue }
                let a = UInt16((alpha * 256).rounded()), keep = 256 - a
                for c in 0..<channels {
                    let d = destination + x * channels + c
                    d.pointee = UInt8((UInt16(d.pointee) * keep + UInt16(source[x * channels + c]) * a + 128) >> 8)
                }
            }
        }
    }

    /// A chroma plane's share (`filtered` and `work` in its half-size samples): each sample takes its
    /// 2×2 block's mean alpha, as the RGB composite seen through 4:2:0 would.
    func compositeChroma(_ filtered: SampleRows, work: PixelRect, into plane: SampleRows, picture: FrameSize, box: PixelRect) {
        let area = extent(of: box, in: picture)
        for cy in (area.y >> 1)..<((area.maxY + 1) >> 1) {
            let destination = plane.row(cy), source = filtered.row(cy - work.y) - work.x
            let rows = [2 * cy, 2 * cy + 1].filter { $0 >= area.y && $0 < area.maxY }
            let spans = rows.map { fullSpan($0, box: box, area: area) }
            for cx in (area.x >> 1)..<((area.maxX + 1) >> 1) {
                var sum = 0.0
                for (y, full) in zip(rows, spans) {
                    for x in [2 * cx, 2 * cx + 1] where x >= area.x && x < area.maxX {
                        sum += full.contains(x) ? 1 : alpha(x, y, box: box)
                    }
                }
                guard sum > 0 else { continue }
                let a = UInt16((sum / 4 * 256).rounded()), keep = 256 - a
                destination[cx] = UInt8((UInt16(destination[cx]) * keep + UInt16(source[cx]) * a + 128) >> 8)
            }
        }
    }

    /// The pixels of row `y` fully covered (inside the box, or the ellipse), within `area`.
    private func fullSpan(_ y: Int, box: PixelRect, area: PixelRect) -> Range<Int> {
        switch shape {
        case .rect:
            return y >= box.y && y < box.maxY ? box.x..<box.maxX : 0..<0
        case .ellipse:
            let cx = Double(box.x) + Double(box.width) / 2, cy = Double(box.y) + Double(box.height) / 2
            let rx = Double(box.width) / 2, ry = Double(box.height) / 2
            let v = (Double(y) + 0.5 - cy) / ry
            guard abs(v) <= 1 else { return 0..<0 }
            let half = rx * (1 - v * v).squareRoot()
            let x0 = max(area.x, Int((cx - half - 0.5).rounded(.up))), x1 = min(area.maxX, Int((cx + half - 0.5).rounded(.down)) + 1)
            return x1 > x0 ? x0..<x1 : 0..<0
        }
    }

    /// How much of the filtered picture pixel (x, y) outside the full span takes: 0…1, fading over
    /// the feather (an ellipse without one: its inside only).
    private func alpha(_ x: Int, _ y: Int, box: PixelRect) -> Double {
        let px = Double(x) + 0.5, py = Double(y) + 0.5
        let distance: Double
        switch shape {
        case .rect:
            let dx = max(Double(box.x) - px, 0, px - Double(box.maxX))
            let dy = max(Double(box.y) - py, 0, py - Double(box.maxY))
            distance = (dx * dx + dy * dy).squareRoot()
        case .ellipse:
            let cx = Double(box.x) + Double(box.width) / 2, cy = Double(box.y) + Double(box.height) / 2
            let u = (px - cx) / (Double(box.width) / 2), v = (py - cy) / (Double(box.height) / 2)
            let r = (u * u + v * v).squareRoot()
            if r <= 1 { distance = 0 } else {
                let dxp = px - cx, dyp = py - cy
                distance = (dxp * dxp + dyp * dyp).squareRoot() * (1 - 1 / r)
            }
        }
        let f = Double(feather)
        return f > 0 ? max(0, min(1, 1 - distance / f)) : (distance == 0 ? 1 : 0)
    }
}

extension GaussianBlur: RegionalFilter {
    /// Three standard deviations: what is left beyond is under 0.3 % of the weight.
    public var regionReach: Int { Int((3 * sigma).rounded(.up)) + 1 }
}

extension BoxBlur: RegionalFilter {
    public var regionReach: Int { radius * power }
}

extension Sharpen: RegionalFilter {
    public var regionReach: Int { radius }
}

extension Pixelate: RegionalFilter {
    public var regionReach: Int { 0 }
    /// Blocks on the frame's grid, as the whole-picture mosaic has them.
    public var regionAlignment: Int { size }
}
