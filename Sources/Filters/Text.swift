import CFreeType
#if canImport(Glibc)
import Glibc
#endif

/// A font file for the text filter: `font=FILE`, or the first of Debian's common fonts present.
public struct FontFile: Sendable, Hashable, CustomStringConvertible {
    /// The file, as the chain's file access admitted it.
    let file: ChainFile
    public var path: String { file.path }
    /// The largest font read.
    static let largest = 64 << 20

    /// Debian packages' fonts, in order of preference (the package names in the comments).
    public static let candidates = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",           // fonts-dejavu-core
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf", // fonts-liberation
        "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf", // fonts-liberation2
        "/usr/share/fonts/truetype/freefont/FreeSans.ttf",           // fonts-freefont-ttf
        "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",       // fonts-noto-core
    ]

    /// The first candidate that exists, or why none does.
    public static func findDefault() throws(Text.FontError) -> FontFile {
        for path in candidates where access(path, R_OK) == 0 { return FontFile(path: path) }
        throw Text.FontError(path: nil, reason: "no font found (looked for \(candidates.joined(separator: ", "))): "
                             + "install one with apt-get install fonts-dejavu-core, or give font=FILE")
    }

    public init(path: String) { file = ChainFile(path: path) }

    init(_ file: ChainFile) { self.file = file }

    public var description: String { path }
}

/// Text drawn on the picture, with FreeType: `text "…" x= y= size= color= box=`. Tokens:
/// `{time}` output time hh:mm:ss.mmm, `{pts}` the shown frame's own time in seconds, `{frame}`
/// the output picture number, `{date}` the wall clock (UTC, for live), `\n` a new line. Glyphs are
/// rendered once per renderer and cached; each picture only lays out and blends.
public struct Text: Filter, Hashable, TimeVaryingFilter {
    public var template: String
    public var x: Anchor
    public var y: Anchor
    /// Pixel height of the em square.
    public var size: Int
    public var color: RGBColor
    public var opacity: Double
    /// A box behind the text, its colour and opacity; nil for none.
    public var box: RGBColor?
    public var boxOpacity: Double
    public var padding: Int?
    public var font: FontFile

    public enum Parameters {
        public static let (x, y) = ValueParameter<Anchor>.placement(default: "16", of: "the text block")
        public static let size = NumericParameter<Int>("size", in: 4...1024, default: 32, summary: "pixel height of the font's em")
        public static let color = ValueParameter<RGBColor>.color("color", default: .white, summary: "the letters' colour")
        public static let opacity = NumericParameter<Double>("opacity", in: 0...1, default: 1, summary: "the letters' opacity")
        /// Written after the box's colour: `box=#000000@0.5`.
        public static let boxOpacity = NumericParameter<Double>("box opacity", in: 0...1, default: 0.6, summary: "the box's opacity")
        public static let padding = NumericParameter<Int>("padding", in: 0...512,
                                                          summary: "the box's margin around the text (default: size/4, at least 2)")
    }

    @available(*, deprecated, renamed: "Parameters.size.range") public static var sizeRange: ClosedRange<Int> { Parameters.size.range }

    static let tokens = ["{time}", "{pts}", "{frame}", "{date}"]

    public struct FontError: Error, Sendable, CustomStringConvertible {
        public let path: String?
        public let reason: String
        public var description: String { path.map { "\($0): \(reason)" } ?? reason }
    }

    public init(_ template: String, x: Anchor = Parameters.x.defaultValue, y: Anchor = Parameters.y.defaultValue,
                size: Int = Parameters.size.defaultValue!, color: RGBColor = Parameters.color.defaultValue,
                opacity: Double = Parameters.opacity.defaultValue!, box: RGBColor? = nil,
                boxOpacity: Double = Parameters.boxOpacity.defaultValue!, padding: Int? = nil, font: FontFile) {
        (self.template, self.x, self.y, self.size, self.color, self.opacity) = (template, x, y, size, color, opacity)
        (self.box, self.boxOpacity, self.padding, self.font) = (box, boxOpacity, padding, font)
    }

    public var isTimeDependent: Bool { Self.tokens.contains { template.contains($0) } }

    public var description: String {
        var parts = ["text", ChainTokenizer.quoted(template), "x=\(x)", "y=\(y)", "size=\(size)", "color=\(color)"]
        if let opacity = Parameters.opacity.argument(opacity) { parts.append(opacity) }
        if let box { parts.append("box=\(box)" + (boxOpacity == Parameters.boxOpacity.defaultValue ? "" : "@\(formatNumber(boxOpacity))")) }
        if let padding { parts.append("padding=\(padding)") }
        if font != (try? FontFile.findDefault()) { parts.append("font=\(ChainTokenizer.quoted(font.path))") }
        return parts.joined(separator: " ")
    }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        try Parameters.size.check(size, filter: description)
        try Parameters.opacity.check(opacity, filter: description)
        try Parameters.boxOpacity.check(boxOpacity, filter: description)
        if let padding { try Parameters.padding.check(padding, filter: description) }
        return input
    }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        _ = try outputSize(for: input)
        do {
            return try TextRenderer(text: self, frame: input)
        } catch {
            throw .invalidGeometry(filter: "text", reason: "\(error)")
        }
    }

    /// Checks that FreeType opens the font (at parse time, so a bad font fails at start-up).
    static func checkFont(_ font: FontFile) throws(FontError) {
        _ = try FontFace(font: font, size: 16)
    }

    /// The text with its tokens replaced for the picture at `time`.
    public func expanded(at time: FrameTime) -> String {
        guard template.contains("{") || template.contains("\\n") else { return template }
        var out = template.replacingAll("\\n", with: "\n")
        if out.contains("{time}") { out = out.replacingAll("{time}", with: Self.clock(time.seconds)) }
        if out.contains("{pts}") { out = out.replacingAll("{pts}", with: Self.fixed(time.sourceSeconds ?? time.seconds, 3)) }
        if out.contains("{frame}") { out = out.replacingAll("{frame}", with: String(time.frame)) }
        if out.contains("{date}") { out = out.replacingAll("{date}", with: Self.date(time.wallClock ?? 0)) }
        return out
    }

    /// hh:mm:ss.mmm
    static func clock(_ seconds: Double) -> String {
        let ms = Int((max(0, seconds) * 1000).rounded(.down))
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let millis = ms % 1000
        return "\(two(ms / 3_600_000)):\(two(ms / 60000 % 60)):\(two(ms / 1000 % 60)).\(millis < 10 ? "00" : millis < 100 ? "0" : "")\(millis)"
    }

    static func fixed(_ value: Double, _ digits: Int) -> String {
        let scale = Double([1, 10, 100, 1000][digits])
        let scaled = Int((value * scale).rounded())
        let whole = scaled / Int(scale), fraction = abs(scaled % Int(scale))
        var text = String(fraction)
        while text.count < digits { text = "0" + text }
        return (value < 0 && whole == 0 ? "-" : "") + "\(whole).\(text)"
    }

    /// YYYY-MM-DD hh:mm:ss UTC
    static func date(_ unix: Double) -> String {
        var seconds = time_t(unix.rounded(.down)), parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) UTC"
    }
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = "", rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            out += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return out + rest
    }
}

/// One FreeType face at one pixel size, owning its library handle and the font's bytes
/// (FreeType handles are not shared between threads; a renderer has its own).
final class FontFace {
    private var library: FT_Library?
    private var face: FT_Face?
    /// The font as read through `ChainFile.open`, like every file the grammar names; the face reads
    /// it for as long as it lives.
    private let bytes: FontBytes
    let ascender: Int
    let lineHeight: Int

    init(font: FontFile, size: Int) throws(Text.FontError) {
        let path = font.file.spelled
        do throws(ChainFile.ReadError) {
            bytes = FontBytes(try font.file.open(largest: FontFile.largest).bytes())
        } catch {
            throw Text.FontError(path: path, reason: error.reason)
        }
        guard FT_Init_FreeType(&library) == 0 else { throw Text.FontError(path: nil, reason: "FreeType did not start") }
        guard let base = bytes.buffer.baseAddress,
              FT_New_Memory_Face(library, base.assumingMemoryBound(to: FT_Byte.self), FT_Long(bytes.buffer.count), 0, &face) == 0,
              let face else {
            FT_Done_FreeType(library)
            throw Text.FontError(path: path, reason: "not a font FreeType can open")
        }
        guard FT_Set_Pixel_Sizes(face, 0, FT_UInt(size)) == 0 else {
            FT_Done_Face(face)
            FT_Done_FreeType(library)
            throw Text.FontError(path: path, reason: "has no size \(size)")
        }
        let metrics = face.pointee.size.pointee.metrics
        ascender = Int(metrics.ascender >> 6)
        lineHeight = max(1, Int(metrics.height >> 6))
    }

    deinit {
        FT_Done_Face(face)
        FT_Done_FreeType(library)
    }

    /// A glyph's coverage bitmap and metrics; nil when the font has no picture for it.
    struct Glyph {
        var width: Int, rows: Int, left: Int, top: Int, advance: Int
        var coverage: [UInt8]
    }

    func render(_ scalar: Unicode.Scalar) -> Glyph? {
        guard let face, FT_Load_Char(face, FT_ULong(scalar.value), Int32(FT_LOAD_RENDER)) == 0, let slot = face.pointee.glyph else { return nil }
        let bitmap = slot.pointee.bitmap
        let width = Int(bitmap.width), rows = Int(bitmap.rows), pitch = Int(bitmap.pitch)
        var coverage = [UInt8](repeating: 0, count: width * rows)
        if let buffer = bitmap.buffer, width > 0, rows > 0, bitmap.pixel_mode == UInt8(FT_PIXEL_MODE_GRAY.rawValue) {
            for r in 0..<rows {
                for c in 0..<width { coverage[r * width + c] = buffer[r * pitch + c] }
            }
        }
        return Glyph(width: width, rows: rows, left: Int(slot.pointee.bitmap_left), top: Int(slot.pointee.bitmap_top),
                     advance: Int(slot.pointee.advance.x >> 6), coverage: coverage)
    }
}

extension Text: ReadsChainFiles {
    var chainFiles: [ChainFile] { [font.file] }
}

/// A font file's bytes, at an address that stays put for FreeType until this goes away.
private final class FontBytes {
    let buffer: UnsafeMutableRawBufferPointer

    init(_ bytes: [UInt8]) {
        buffer = .allocate(byteCount: bytes.count, alignment: 16)
        buffer.copyBytes(from: bytes)
    }

    deinit { buffer.deallocate() }
}

/// Lays text out (glyphs cached, the last layout reused while the text stays the same) and draws it
/// on a surface: the RGB picture, or one plane of a 4:2:0 picture.
final class TextPainter {
    private let text: Text
    private let face: FontFace
    private var glyphs: [UInt32: FontFace.Glyph?] = [:]
    /// The last layout's text and its glyph placements.
    private var laidOut: (text: String, width: Int, height: Int, placements: [(glyph: FontFace.Glyph, x: Int, y: Int)])?

    init(text: Text) throws(Text.FontError) {
        self.text = text
        face = try FontFace(font: text.font, size: text.size)
    }

    private func glyph(_ scalar: Unicode.Scalar) -> FontFace.Glyph? {
        if let cached = glyphs[scalar.value] { return cached }
        let made = face.render(scalar)
        glyphs[scalar.value] = made
        return made
    }

    /// Glyph positions relative to the text block's top-left, and the block's size.
    private func layout(_ string: String) -> (width: Int, height: Int, placements: [(glyph: FontFace.Glyph, x: Int, y: Int)]) {
        if let laidOut, laidOut.text == string { return (laidOut.width, laidOut.height, laidOut.placements) }
        var placements: [(glyph: FontFace.Glyph, x: Int, y: Int)] = []
        var width = 0, line = 0
        for text in string.split(separator: "\n", omittingEmptySubsequences: false) {
            var pen = 0
            let baseline = line * face.lineHeight + face.ascender
            for scalar in text.unicodeScalars {
                guard let g = glyph(scalar) else { continue }
                if g.width > 0, g.rows > 0 { placements.append((g, pen + g.left, baseline - g.top)) }
                pen += g.advance
            }
            width = max(width, pen)
            line += 1
        }
        let height = line * face.lineHeight
        laidOut = (string, width, height, placements)
        return (width, height, placements)
    }

    /// The box (if any), then each glyph, as the picture at `time` shows them.
    func draw(on surface: some BlendSurface, at time: FrameTime) {
        let (width, height, placements) = layout(text.expanded(at: time))
        guard width > 0 else { return }
        let frame = surface.pictureSize
        let pad = text.box == nil ? 0 : (text.padding ?? max(2, text.size / 4))
        let boxWidth = width + 2 * pad, boxHeight = height + 2 * pad
        let left = text.x.position(extent: frame.width, length: boxWidth)
        let top = text.y.position(extent: frame.height, length: boxHeight)
        if let box = text.box {
            let alpha = Int((text.boxOpacity * 255).rounded())
            if alpha > 0 { surface.paint(box, through: .constant(alpha, over: PixelRect(x: left, y: top, width: boxWidth, height: boxHeight))) }
        }
        let opacity = Int((text.opacity * 256).rounded())
        for p in placements {
            p.glyph.coverage.withUnsafeBufferPointer { coverage in
                let rect = PixelRect(x: left + pad + p.x, y: top + pad + p.y, width: p.glyph.width, height: p.glyph.rows)
                surface.paint(text.color, through: AlphaMask(rect: rect, coverage: coverage.baseAddress, constant: 0, opacity: opacity))
            }
        }
    }
}

private final class TextRenderer: InPlaceFilterRenderer, TimedFilterRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let painter: TextPainter

    init(text: Text, frame: FrameSize) throws(Text.FontError) {
        inputSize = frame
        painter = try TextPainter(text: text)
    }

    func render(_ source: RGBImage, into destination: RGBImage) { render(source, into: destination, at: .zero) }

    func render(_ source: RGBImage, into destination: RGBImage, at time: FrameTime) {
        destination.copyPixels(from: source)
        renderInPlace(destination, at: time)
    }

    func renderInPlace(_ image: RGBImage, at time: FrameTime) {
        painter.draw(on: RGBSurface(image: image), at: time)
    }
}

// Text on a plane: the same layout and paints through `PlaneSurface` (see BlendSurface.swift).
extension Text: PlanarFilter {
    public var drawsInPlace: Bool { true }

    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        guard let painter = try? TextPainter(text: self) else { return nil }
        return TextPlaneRenderer(painter: painter, picture: picture, role: role, color: color)
    }
}

private final class TextPlaneRenderer: InPlacePlaneRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let painter: TextPainter
    private let picture: FrameSize
    private let role: PlaneRole
    private let color: YUVConverter

    init(painter: TextPainter, picture: FrameSize, role: PlaneRole, color: YUVConverter) {
        (self.painter, self.picture, self.role, self.color) = (painter, picture, role, color)
        inputSize = picture.shifted(by: role.shift)
    }

    func renderInPlace(_ plane: Plane, at time: FrameTime) {
        painter.draw(on: PlaneSurface(plane: plane, role: role, pictureSize: picture, color: color), at: time)
    }
}
