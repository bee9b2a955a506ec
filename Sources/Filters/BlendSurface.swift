// Text and overlays paint colours over the picture with an alpha: d·(255 − a) + s·a over 255.
// Per pixel that is a weighted sum with weights adding up to one, so it commutes with Y′CbCr ↔ RGB:
// on the luma plane it is the same blend with the colour's luma. A chroma sample stands for a 2×2
// block (replicated on the way to RGB, averaged on the way back), so it takes the block's mean:
// C·(1020 − Σa) + Σ a·s over 1020, Σ over the block's four alphas. One layer over an unpainted
// picture is then exactly the RGB blend (up to RGB clipping and rounding); layers that overlap
// inside one block (a glyph over a box edge) are within a rounding step or two.

/// Which alpha a paint has at each picture pixel: one value over a rectangle (a text box), or a
/// coverage bitmap (a glyph) scaled by an opacity.
struct AlphaMask {
    /// The mask's extent in picture coordinates (may reach past the picture; it is clipped).
    var rect: PixelRect
    /// Coverage rows `rect.width` apart, or nil for `constant` everywhere in `rect`.
    var coverage: UnsafePointer<UInt8>?
    var constant: Int
    /// 256: the coverage as it is.
    var opacity: Int

    static func constant(_ alpha: Int, over rect: PixelRect) -> AlphaMask {
        AlphaMask(rect: rect, coverage: nil, constant: alpha, opacity: 256)
    }

    /// The alpha at picture pixel (x, y), which must lie in `rect`.
    @inline(__always) func alpha(_ x: Int, _ y: Int) -> Int {
        guard let coverage else { return constant }
        let a = Int(coverage[(y - rect.y) * rect.width + (x - rect.x)])
        return opacity < 256 ? (a * opacity + 128) >> 8 : a
    }

    /// The sum of the alphas of the 2×2 block whose top-left is (x, y); 0 outside `rect` or the picture.
    @inline(__always) func blockAlpha(_ x: Int, _ y: Int, picture: FrameSize) -> Int {
        var sum = 0
        for v in y..<(y + 2) where v >= rect.y && v < rect.y + rect.height && v < picture.height {
            for u in x..<(x + 2) where u >= rect.x && u < rect.x + rect.width && u < picture.width { sum += alpha(u, v) }
        }
        return sum
    }
}

/// Something text can be drawn on: an RGB picture, or one plane of a 4:2:0 picture.
protocol BlendSurface {
    var pictureSize: FrameSize { get }
    /// Paints `color` through `mask`, clipped to the picture.
    func paint(_ color: RGBColor, through mask: AlphaMask)
}

extension AlphaMask {
    /// `rect` clipped to a picture of `size`, as (x0, y0, x1, y1); nil when nothing is left.
    func clipped(to size: FrameSize) -> (x0: Int, y0: Int, x1: Int, y1: Int)? {
        let x0 = max(0, rect.x), y0 = max(0, rect.y)
        let x1 = min(size.width, rect.x + rect.width), y1 = min(size.height, rect.y + rect.height)
        return x1 > x0 && y1 > y0 ? (x0, y0, x1, y1) : nil
    }
}

/// d·(255 − a) + s·a over 255, rounded (libavfilter's division: (x + 128)·257 >> 16).
@inline(__always) func blend255(_ d: UInt8, _ s: UInt8, _ a: Int) -> UInt8 {
    UInt8(((Int(d) * (255 - a) + Int(s) * a + 128) * 257) >> 16)
}

/// d·(1020 − A) + s·A over 1020, rounded: a chroma sample under its block's four alphas.
@inline(__always) func blendBlock(_ d: UInt8, sum s: Int, alphas a: Int) -> UInt8 {
    UInt8(clamping: (Int(d) * (1020 - a) + s + 510) / 1020)
}

struct RGBSurface: BlendSurface {
    let image: RGBImage
    var pictureSize: FrameSize { image.size }

    func paint(_ color: RGBColor, through mask: AlphaMask) {
        guard let (x0, y0, x1, y1) = mask.clipped(to: pictureSize) else { return }
        for y in y0..<y1 {
            let row = image.row(y)
            for x in x0..<x1 {
                let a = mask.alpha(x, y)
                guard a > 0 else { continue }
                let p = row + 3 * x
                p[0] = blend255(p[0], color.r, a); p[1] = blend255(p[1], color.g, a); p[2] = blend255(p[2], color.b, a)
            }
        }
    }
}

struct PlaneSurface: BlendSurface {
    let plane: Plane
    let role: PlaneRole
    let pictureSize: FrameSize
    let color: YUVConverter

    func paint(_ rgb: RGBColor, through mask: AlphaMask) {
        guard let (x0, y0, x1, y1) = mask.clipped(to: pictureSize) else { return }
        let samples = color.samples(of: rgb)
        if role == .luma {
            for y in y0..<y1 {
                let row = plane.row(y)
                for x in x0..<x1 {
                    let a = mask.alpha(x, y)
                    if a > 0 { row[x] = blend255(row[x], samples.y, a) }
                }
            }
            return
        }
        let value = Int(role == .cb ? samples.cb : samples.cr)
        for cy in (y0 >> 1)..<((y1 + 1) >> 1) {
            let row = plane.row(cy)
            for cx in (x0 >> 1)..<((x1 + 1) >> 1) {
                let a = mask.blockAlpha(2 * cx, 2 * cy, picture: pictureSize)
                if a > 0 { row[cx] = blendBlock(row[cx], sum: value * a, alphas: a) }
            }
        }
    }
}
