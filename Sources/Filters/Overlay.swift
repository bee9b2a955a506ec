import CPNG
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Where a thing of some size sits along one side of the picture: `16` or `10%` from the start,
/// or `left|center|right` (`top|middle|bottom`) with an offset, e.g. `right-16`, `top+16`,
/// `center`. Resolved to the thing's first pixel.
public struct Anchor: Sendable, Hashable, CustomStringConvertible {
    public enum Reference: String, Sendable {
        case start, center, end
    }

    public var reference: Reference
    /// Pixels, or percent of the picture's side when `percent`.
    public var offset: Double
    public var percent = false
    /// As written, for `description`.
    private let spelled: String

    /// Parses an anchor; `vertical` picks the names top/middle/bottom (center also works).
    public init?(_ text: String, vertical: Bool) {
        spelled = text
        let names: [(String, Reference)] = vertical
            ? [("top", .start), ("middle", .center), ("center", .center), ("bottom", .end)]
            : [("left", .start), ("center", .center), ("right", .end)]
        if let (name, reference) = names.first(where: { text.hasPrefix($0.0) }) {
            self.reference = reference
            let rest = text.dropFirst(name.count)
            if rest.isEmpty { offset = 0; return }
            guard let sign = rest.first, sign == "+" || sign == "-", let value = Double(rest.dropFirst()), value.isFinite,
                  abs(value) <= Double(FilterCatalog.maxSide) else { return nil }
            offset = sign == "-" ? -value : value
            return
        }
        reference = .start
        if text.hasSuffix("%") {
            guard let value = Double(text.dropLast()), value.isFinite, abs(value) <= 100 else { return nil }
            (offset, percent) = (value, true)
            return
        }
        guard let value = Double(text), value.isFinite, abs(value) <= Double(FilterCatalog.maxSide) else { return nil }
        offset = value
    }

    /// The thing's first pixel on a side of `extent` pixels, the thing being `length` long.
    public func position(extent: Int, length: Int) -> Int {
        let start: Double = switch reference {
        case .start: percent ? offset / 100 * Double(extent) : offset
        case .center: Double(extent - length) / 2 + offset
        case .end: Double(extent - length) + offset
        }
        return Int(start.rounded(.down))
    }

    public var description: String { spelled }
    public static func == (a: Anchor, b: Anchor) -> Bool { a.spelled == b.spelled }
    public func hash(into hasher: inout Hasher) { hasher.combine(spelled) }
}

/// An RGBA picture with straight (not premultiplied) alpha, rows packed, as PNG holds it.
public final class RGBAImage: Sendable {
    public let width: Int
    public let height: Int
    public let pixels: [UInt8]

    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(pixels.count == width * height * 4, "RGBA needs 4 bytes a pixel")
        (self.width, self.height, self.pixels) = (width, height, pixels)
    }

    /// Why an image file cannot be used.
    public struct LoadError: Error, Sendable, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "\(path): \(reason)" }
    }

    private static let cache = Mutex<[ChainFile: (stamp: [Int], image: RGBAImage)]>([:])
    static let largestFile = 256 << 20

    /// `png(path:)`, read once while the file stays the same (a keyframed overlay builds its
    /// filter again whenever a value changes).
    public static func cachedPNG(path: String) throws(LoadError) -> RGBAImage {
        try cachedPNG(file: ChainFile(path: path))
    }

    /// The PNG in `file`, read once while the file stays the same: the open file's device, inode,
    /// size and time are compared, so a hit is the file just opened.
    static func cachedPNG(file: ChainFile) throws(LoadError) -> RGBAImage {
        let opened: OpenedFile
        do throws(ChainFile.ReadError) { opened = try file.open(largest: largestFile) } catch { throw LoadError(path: file.spelled, reason: error.reason) }
        let stamp = opened.stamp
        if let hit = cache.withLock({ $0[file] }), hit.stamp == stamp { return hit.image }
        let image = try png(opened, path: file.spelled)
        cache.withLock { $0[file] = (stamp, image) }
        return image
    }

    /// Reads a PNG of any kind (palette, grey, 16-bit, interlaced) with libpng, as 8-bit RGBA.
    public static func png(path: String) throws(LoadError) -> RGBAImage {
        let opened: OpenedFile
        do throws(ChainFile.ReadError) { opened = try ChainFile(path: path).open(largest: largestFile) } catch { throw LoadError(path: path, reason: error.reason) }
        return try png(opened, path: path)
    }

    private static func png(_ file: borrowing OpenedFile, path: String) throws(LoadError) -> RGBAImage {
        let bytes: [UInt8]
        do throws(ChainFile.ReadError) { bytes = try file.bytes() } catch { throw LoadError(path: path, reason: error.reason) }
        // libpng reads the header in `begin_read` and the rest in `finish_read`: both within one
        // borrow of the bytes.
        return try bytes.withUnsafeBytes { decodePNG($0, path: path) }.get()
    }

    private static func decodePNG(_ data: UnsafeRawBufferPointer, path: String) -> Result<RGBAImage, LoadError> {
        var image = png_image()
        image.version = png_uint_32(lf_png_image_version)
        defer { png_image_free(&image) }
        func message() -> String {
            withUnsafeBytes(of: image.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        guard png_image_begin_read_from_memory(&image, data.baseAddress, data.count) != 0 else {
            return .failure(LoadError(path: path, reason: "not a PNG libpng can read (\(message()))"))
        }
        let width = Int(image.width), height = Int(image.height)
        guard width > 0, height > 0, width <= FilterCatalog.maxSide, height <= FilterCatalog.maxSide else {
            return .failure(LoadError(path: path, reason: "\(width)x\(height) is not a size an overlay can have (at most \(FilterCatalog.maxSide) a side)"))
        }
        image.format = lf_png_format_rgba
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        let finished = pixels.withUnsafeMutableBytes { png_image_finish_read(&image, nil, $0.baseAddress, png_int_32(width * 4), nil) }
        guard finished != 0 else { return .failure(LoadError(path: path, reason: "cannot decode it (\(message()))")) }
        return .success(RGBAImage(width: width, height: height, pixels: pixels))
    }
}

/// Composites a picture with alpha (a PNG, e.g. a logo) over the frame: ffmpeg's `overlay` with
/// `format=rgb`, to the bit at scale 1 and full opacity. `alpha=straight` (PNG's own meaning) or
/// `premultiplied` (colour already multiplied by alpha, as some tools write). `scale` resizes
/// the image once, in premultiplied form so edges take no dark fringe; `opacity` multiplies its alpha.
public struct Overlay: Filter, Hashable {
    public enum Alpha: String, CaseIterable, Sendable { case straight, premultiplied }

    public var path: String { file.path }
    /// The file the image was read from.
    let file: ChainFile
    public let image: RGBAImage
    public var x: Anchor
    public var y: Anchor
    public var opacity: Double
    public var scale: Double
    public var alpha: Alpha

    public enum Parameters {
        public static let (x, y) = ValueParameter<Anchor>.placement(default: "0", of: "the image")
        public static let opacity = NumericParameter<Double>("opacity", in: 0...1, default: 1, summary: "multiplies its alpha")
        public static let scale = NumericParameter<Double>("scale", in: 0.01...16, default: 1,
                                                           summary: "resizes the image (once, in premultiplied form)")
        public static let alpha = ValueParameter<Alpha>.choice("alpha", default: .straight,
                                                                summary: "straight (PNG's meaning) or premultiplied (colour already multiplied by alpha)")
    }

    @available(*, deprecated, renamed: "Parameters.scale.range") public static var scaleRange: ClosedRange<Double> { Parameters.scale.range }

    public init(path: String, image: RGBAImage, x: Anchor = Parameters.x.defaultValue, y: Anchor = Parameters.y.defaultValue,
                opacity: Double = Parameters.opacity.defaultValue!, scale: Double = Parameters.scale.defaultValue!,
                alpha: Alpha = Parameters.alpha.defaultValue) {
        self.init(file: ChainFile(path: path), image: image, x: x, y: y, opacity: opacity, scale: scale, alpha: alpha)
    }

    init(file: ChainFile, image: RGBAImage, x: Anchor = Parameters.x.defaultValue, y: Anchor = Parameters.y.defaultValue,
         opacity: Double = Parameters.opacity.defaultValue!, scale: Double = Parameters.scale.defaultValue!,
         alpha: Alpha = Parameters.alpha.defaultValue) {
        (self.file, self.image, self.x, self.y, self.opacity, self.scale, self.alpha) = (file, image, x, y, opacity, scale, alpha)
    }

    public static func == (a: Overlay, b: Overlay) -> Bool { a.description == b.description && a.image === b.image }
    public func hash(into hasher: inout Hasher) { hasher.combine(description) }

    public var description: String {
        var parts = ["overlay", ChainTokenizer.quoted(path), "x=\(x)", "y=\(y)"]
        parts += [Parameters.opacity.argument(opacity), Parameters.scale.argument(scale), Parameters.alpha.argument(alpha)].compactMap { $0 }
        return parts.joined(separator: " ")
    }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        try Parameters.opacity.check(opacity, filter: description)
        try Parameters.scale.check(scale, filter: description)
        return input
    }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        OverlayRenderer(overlay: self, frame: try outputSize(for: input))
    }

    /// The image as composited: its size after `scale`, and its colour premultiplied or straight.
    struct Prepared {
        var width: Int, height: Int
        /// RGBA, 4 bytes a pixel; colour premultiplied when `premultiplied`.
        var pixels: [UInt8]
        var premultiplied: Bool
    }

    func prepared() -> Prepared {
        let w = max(1, Int((Double(image.width) * scale).rounded())), h = max(1, Int((Double(image.height) * scale).rounded()))
        if w == image.width, h == image.height {
            return Prepared(width: w, height: h, pixels: image.pixels, premultiplied: alpha == .premultiplied)
        }
        // Resample colour premultiplied, and alpha, with the scale filter's kernel.
        let colour = RGBImage(width: image.width, height: image.height), coverage = RGBImage(width: image.width, height: image.height)
        for row in 0..<image.height {
            let c = colour.row(row), a = coverage.row(row)
            for col in 0..<image.width {
                let i = (row * image.width + col) * 4, alphaValue = image.pixels[i + 3]
                for k in 0..<3 {
                    let v = image.pixels[i + k]
                    c[col * 3 + k] = alpha == .premultiplied ? v : UInt8((Int(v) * Int(alphaValue) + 127) / 255)
                    a[col * 3 + k] = alphaValue
                }
            }
        }
        let size = FrameSize(w, h)
        guard let colourOut = try? FiltersRender.once(Scale(width: w, height: h), colour),
              let alphaOut = try? FiltersRender.once(Scale(width: w, height: h), coverage) else {
            return Prepared(width: image.width, height: image.height, pixels: image.pixels, premultiplied: alpha == .premultiplied)
        }
        var pixels = [UInt8](repeating: 0, count: size.pixelCount * 4)
        for row in 0..<h {
            let c = colourOut.row(row), a = alphaOut.row(row)
            for col in 0..<w {
                let i = (row * w + col) * 4
                let alphaValue = a[col * 3]
                pixels[i + 3] = alphaValue
                // A premultiplied colour never exceeds its alpha.
                for k in 0..<3 { pixels[i + k] = min(c[col * 3 + k], alphaValue) }
            }
        }
        return Prepared(width: w, height: h, pixels: pixels, premultiplied: true)
    }
}

extension Overlay: ReadsChainFiles {
    var chainFiles: [ChainFile] { [file] }
}

enum FiltersRender {
    static func once(_ filter: any Filter, _ image: RGBImage) throws(FilterError) -> RGBImage {
        let renderer = try filter.makeRenderer(for: image.size)
        let out = RGBImage(size: renderer.outputSize)
        renderer.render(image, into: out)
        return out
    }
}

private final class OverlayRenderer: InPlaceFilterRenderer, TimedFilterRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let image: Overlay.Prepared
    /// The overlay's visible part: frame rectangle and the image's first pixel in it.
    private let visible: PixelRect?
    private let imageOrigin: (x: Int, y: Int)
    /// Opacity in 1/256 (256: opaque as the image says).
    private let opacity: Int

    init(overlay: Overlay, frame: FrameSize) {
        inputSize = frame
        image = overlay.prepared()
        let x = overlay.x.position(extent: frame.width, length: image.width)
        let y = overlay.y.position(extent: frame.height, length: image.height)
        imageOrigin = (x, y)
        let x0 = max(0, x), y0 = max(0, y), x1 = min(frame.width, x + image.width), y1 = min(frame.height, y + image.height)
        visible = x1 > x0 && y1 > y0 ? PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0) : nil
        opacity = Int((overlay.opacity * 256).rounded())
    }

    func render(_ source: RGBImage, into destination: RGBImage) { render(source, into: destination, at: .zero) }

    func render(_ source: RGBImage, into destination: RGBImage, at time: FrameTime) {
        destination.copyPixels(from: source)
        renderInPlace(destination, at: time)
    }

    /// libavfilter's blend: d·(255 − a) + s·a over 255 (straight), or d·(255 − a) / 255 + s
    /// (premultiplied), with its division (x + 128)·257 >> 16.
    func renderInPlace(_ frame: RGBImage, at time: FrameTime) {
        guard let visible, opacity > 0 else { return }
        let full = opacity >= 256
        image.pixels.withUnsafeBufferPointer { pixels in
            for y in visible.y..<(visible.y + visible.height) {
                let d = frame.row(y)
                var s = pixels.baseAddress! + ((y - imageOrigin.y) * image.width + (visible.x - imageOrigin.x)) * 4
                for x in visible.x..<(visible.x + visible.width) {
                    var a = Int(s[3])
                    if !full { a = (a * opacity + 128) >> 8 }
                    if a != 0 {
                        let p = d + 3 * x
                        for k in 0..<3 {
                            let dv = Int(p[k]), sv = Int(s[k])
                            if image.premultiplied {
                                let colour = full ? sv : (sv * opacity + 128) >> 8
                                p[k] = UInt8(min(255, div255(dv * (255 - a)) + colour))
                            } else {
                                p[k] = UInt8(div255(dv * (255 - a) + sv * a))
                            }
                        }
                    }
                    s += 4
                }
            }
        }
    }

    @inline(__always) private func div255(_ x: Int) -> Int { ((x + 128) * 257) >> 16 }
}

// An overlay on a plane: its straight colour's samples blended with its alpha, per pixel on luma,
// per 2×2 block on chroma (see BlendSurface.swift). The image does not change, so each plane's
// weights are worked out once.
extension Overlay: PlanarFilter {
    public var drawsInPlace: Bool { true }

    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        OverlayPlaneRenderer(overlay: self, picture: picture, role: role, color: color)
    }
}

private final class OverlayPlaneRenderer: InPlacePlaneRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    /// The painted samples of this plane (nil: the overlay is off the picture or transparent).
    private let area: PixelRect?
    /// Per sample of `area`: the alpha (luma: 0…255; chroma: the block's sum, 0…1020) and the
    /// alpha-weighted colour sample.
    private let alphas: [Int32]
    private let sums: [Int32]
    private let luma: Bool

    init(overlay: Overlay, picture: FrameSize, role: PlaneRole, color: YUVConverter) {
        inputSize = picture.shifted(by: role.shift)
        luma = role == .luma
        let image = overlay.prepared()
        let ox = overlay.x.position(extent: picture.width, length: image.width)
        let oy = overlay.y.position(extent: picture.height, length: image.height)
        let opacity = Int((overlay.opacity * 256).rounded())
        let x0 = max(0, ox), y0 = max(0, oy), x1 = min(picture.width, ox + image.width), y1 = min(picture.height, oy + image.height)
        guard x1 > x0, y1 > y0, opacity > 0 else {
            (area, alphas, sums) = (nil, [], [])
            return
        }
        let shift = role.shift
        let rect = PixelRect(x: x0 >> shift, y: y0 >> shift, width: ((x1 + shift) >> shift) - (x0 >> shift),
                             height: ((y1 + shift) >> shift) - (y0 >> shift))
        var alphas = [Int32](repeating: 0, count: rect.width * rect.height), sums = alphas
        // Per picture pixel, as OverlayRenderer blends it: d·(255 − a) + 255·P over 255, P the
        // premultiplied colour. On a plane that is d·(255 − a) + a·offset + 255·(M·P), M this
        // plane's row of the forward matrix: exact, with no division by alpha.
        let row = color.forwardMatrix[role.rawValue], offset = role == .luma ? color.yOffset : 128
        for y in y0..<y1 {
            for x in x0..<x1 {
                let i = ((y - oy) * image.width + (x - ox)) * 4
                let stored = Int(image.pixels[i + 3])
                let a = opacity >= 256 ? stored : (stored * opacity + 128) >> 8
                guard a > 0 else { continue }
                var premultiplied = 0.0
                for k in 0..<3 {
                    let v = Double(image.pixels[i + k])
                    // Straight colour: v·a/255; premultiplied: v at the opacity (as OverlayRenderer rounds it).
                    let p = image.premultiplied ? Double(opacity >= 256 ? Int(v) : (Int(v) * opacity + 128) >> 8) : v * Double(a) / 255
                    premultiplied += row[k] * p
                }
                let j = ((y >> shift) - rect.y) * rect.width + ((x >> shift) - rect.x)
                alphas[j] += Int32(a)
                sums[j] += Int32((Double(a) * offset + 255 * premultiplied).rounded())
            }
        }
        (area, self.alphas, self.sums) = (rect, alphas, sums)
    }

    func renderInPlace(_ plane: Plane, at time: FrameTime) {
        guard let area else { return }
        for v in 0..<area.height {
            let row = plane.row(area.y + v) + area.x
            let base = v * area.width
            for u in 0..<area.width {
                let a = Int(alphas[base + u])
                guard a > 0 else { continue }
                let s = Int(sums[base + u])
                row[u] = luma ? UInt8(clamping: ((Int(row[u]) * (255 - a) + s + 128) * 257) >> 16) : blendBlock(row[u], sum: s, alphas: a)
            }
        }
    }
}
