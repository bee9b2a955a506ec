/// One parameter of a filter in the chain grammar.
public struct ParameterDefinition: Sendable {
    public enum Kind: Sendable, Equatable {
        case number(ClosedRange<Double>)
        case integer(ClosedRange<Int>)
        case choice([String])
        /// `WxH`
        case size
        /// `#RRGGBB`
        case color
        /// `WxH+X+Y`
        case rectangle
        /// A form of its own, checked by the filter (e.g. `enable=` ranges); the text says which.
        case text(String)
        /// A file the filter reads, admitted by the parse's `ChainFileAccess`; the text says what kind.
        case file(String)
    }

    public let key: String
    public let kind: Kind
    /// Whether the value may be given without `key=` (matched in declaration order by form).
    public let positional: Bool
    public let defaultValue: String?
    public let summary: String

    /// The accepted form, for help and error messages.
    public var expected: String { kind.expected }

    /// Whether the value may be keyframed (`V@T,V@T,…`): numbers and integers.
    public var animates: Bool {
        switch kind {
        case .number, .integer: true
        default: false
        }
    }
}

extension ParameterDefinition.Kind {
    /// The accepted form, for help and error messages.
    public var expected: String {
        switch self {
        case let .number(range): "a number in \(formatNumber(range.lowerBound))…\(formatNumber(range.upperBound))"
        case let .integer(range): "an integer in \(range.lowerBound)…\(range.upperBound)"
        case let .choice(values): "one of \(values.joined(separator: "|"))"
        case .size: "WxH, e.g. 1280x720"
        case .color: "#RRGGBB, e.g. #FF8000"
        case .rectangle: "WxH+X+Y, e.g. 640x360+10+20"
        case let .text(form), let .file(form): form
        }
    }
}

/// A parsed parameter value.
public enum ParameterValue: Sendable, Equatable {
    case number(Double)
    case integer(Int)
    case choice(String)
    case size(FrameSize)
    case color(RGBColor)
    case rectangle(PixelRect)
    /// A `.text` parameter's value as written; its filter checks the form.
    case text(String)
    /// A `.file` parameter's file, as the parse's file access admitted it.
    case file(ChainFile)
}

/// One filter of the chain grammar: name, summary, parameters and how to build it.
public struct FilterDefinition: Sendable {
    public let name: String
    public let summary: String
    public let parameters: [ParameterDefinition]
    public let examples: [String]
    let build: @Sendable ([String: ParameterValue]) throws(ChainSyntaxError) -> any Filter
}

/// The single table the chain parser is built from; `livefilter filters` prints the same table. A
/// filter's own parameters come from its `Parameters` declarations (range, default, help); the rest
/// are forms of the grammar (sizes, rectangles, files).
public enum FilterCatalog {
    static let maxSide = 16384

    public static let definitions: [FilterDefinition] = [
        FilterDefinition(
            name: "blur", summary: "Gaussian blur, clamp-to-edge; with x, y, w, h only that rectangle (privacy blur)",
            parameters: [
                .init(GaussianBlur.Parameters.sigma, positional: true),
                .init(key: "x", kind: .integer(0...maxSide), positional: false, defaultValue: nil, summary: "region left"),
                .init(key: "y", kind: .integer(0...maxSide), positional: false, defaultValue: nil, summary: "region top"),
                .init(key: "w", kind: .integer(1...maxSide), positional: false, defaultValue: nil, summary: "region width"),
                .init(key: "h", kind: .integer(1...maxSide), positional: false, defaultValue: nil, summary: "region height"),
            ],
            examples: ["blur 6", "blur sigma=12 x=10 y=20 w=200 h=100"],
            build: { (values: [String: ParameterValue]) throws(ChainSyntaxError) -> any Filter in
                let sigma = try values.required(GaussianBlur.Parameters.sigma, filter: "blur")
                let region = ["x", "y", "w", "h"].compactMap { key -> Int? in
                    if case let .integer(v)? = values[key] { return v } else { return nil }
                }
                switch region.count {
                case 0: return GaussianBlur(sigma: sigma)
                case 4: return GaussianBlur(sigma: sigma, region: PixelRect(x: region[0], y: region[1], width: region[2], height: region[3]))
                default: throw .conflict(filter: "blur", message: "a region needs all of x, y, w and h")
                }
            }),
        FilterDefinition(
            name: "rotate", summary: "rotate clockwise by degrees; multiples of 90 are exact, others bilinear",
            parameters: [
                .init(Rotate.Parameters.angle, positional: true),
                .init(Rotate.Parameters.mode, positional: true),
                .init(Rotate.Parameters.fill),
            ],
            examples: ["rotate 90", "rotate -90", "rotate 33.5 keep fill=#202020"],
            build: { (values: [String: ParameterValue]) throws(ChainSyntaxError) -> any Filter in
                var rotate = Rotate(degrees: try values.required(Rotate.Parameters.angle, filter: "rotate"))
                if let canvas = values[Rotate.Parameters.mode] { rotate.canvas = canvas }
                if let fill = values[Rotate.Parameters.fill] { rotate.fill = fill }
                return rotate
            }),
        FilterDefinition(
            name: "mirror", summary: "mirror: horizontal swaps left and right (hflip), vertical swaps top and bottom (vflip)",
            parameters: [.init(Mirror.Parameters.axis, positional: true)],
            examples: ["mirror", "mirror vertical"],
            build: { (values: [String: ParameterValue]) throws(ChainSyntaxError) -> any Filter in
                Mirror(axis: values[Mirror.Parameters.axis] ?? Mirror.Parameters.axis.defaultValue)
            }),
        FilterDefinition(
            name: "scale", summary: "resize: exact WxH, fit=WxH (inside the box), width=W or height=H (aspect kept), max=N (never upscales)",
            parameters: [
                .init(key: "size", kind: .size, positional: true, defaultValue: nil, summary: "exact output size"),
                .init(key: "fit", kind: .size, positional: false, defaultValue: nil, summary: "largest size inside this box, aspect kept"),
                .init(key: "width", kind: .integer(1...maxSide), positional: false, defaultValue: nil, summary: "output width, height follows"),
                .init(key: "height", kind: .integer(1...maxSide), positional: false, defaultValue: nil, summary: "output height, width follows"),
                .init(key: "max", kind: .integer(1...maxSide), positional: false, defaultValue: nil, summary: "longest side at most N"),
                .init(Scale.Parameters.method, positional: true),
            ],
            examples: ["scale 1280x720", "scale fit=1280x720", "scale width=640 method=area", "scale max=1280"],
            build: { (values: [String: ParameterValue]) throws(ChainSyntaxError) -> any Filter in
                var modes: [Scale.Mode] = []
                if case let .size(s)? = values["size"] { modes.append(.exact(s)) }
                if case let .size(s)? = values["fit"] { modes.append(.fit(s)) }
                if case let .integer(w)? = values["width"] { modes.append(.width(w)) }
                if case let .integer(h)? = values["height"] { modes.append(.height(h)) }
                if case let .integer(n)? = values["max"] { modes.append(.max(n)) }
                guard modes.count == 1 else {
                    throw .conflict(filter: "scale", message: "give exactly one of WxH, fit=WxH, width=W, height=H, max=N (got \(modes.count))")
                }
                return Scale(modes[0], method: values[Scale.Parameters.method] ?? Scale.Parameters.method.defaultValue)
            }),
        FilterDefinition(
            name: "crop", summary: "keep the WxH rectangle whose top-left pixel is (X, Y); it must lie inside the frame",
            parameters: [
                .init(key: "rect", kind: .rectangle, positional: true, defaultValue: nil, summary: "WxH+X+Y"),
            ],
            examples: ["crop 640x360+10+20"],
            build: { (values: [String: ParameterValue]) throws(ChainSyntaxError) -> any Filter in
                guard case let .rectangle(r)? = values["rect"] else {
                    throw .missingParameter(filter: "crop", key: "rect", expected: ParameterDefinition.Kind.rectangle.expected)
                }
                return Crop(width: r.width, height: r.height, x: r.x, y: r.y)
            }),
        FilterDefinition(
            name: "invert", summary: "the negative: every channel becomes 255 minus its value (ffmpeg's negate)",
            parameters: [],
            examples: ["invert"],
            build: { (_: [String: ParameterValue]) throws(ChainSyntaxError) -> any Filter in Invert() }),
        FilterDefinition(
            name: "pixelate", summary: "mosaic of N×N blocks from the top-left, each its pixels' mean (ffmpeg's pixelize w=h=N, rounded)",
            parameters: [.init(Pixelate.Parameters.size, positional: true)],
            examples: ["pixelate 16", "pixelate size=32"],
            build: { (values: [String: ParameterValue]) throws(ChainSyntaxError) -> any Filter in
                Pixelate(size: try values.required(Pixelate.Parameters.size, filter: "pixelate"))
            }),
        FilterDefinition(
            name: "boxblur", summary: "box blur: the mean of the (2R+1)² square, power times, edges mirrored (ffmpeg's boxblur, to the bit)",
            parameters: [
                .init(BoxBlur.Parameters.radius, positional: true),
                .init(BoxBlur.Parameters.power),
            ],
            examples: ["boxblur 4", "boxblur radius=10 power=2"],
            build: { (values: [String: ParameterValue]) throws(ChainSyntaxError) -> any Filter in
                var filter = BoxBlur(radius: try values.required(BoxBlur.Parameters.radius, filter: "boxblur"))
                if let power = values[BoxBlur.Parameters.power] { filter.power = power }
                return filter
            }),
        FilterDefinition(
            name: "sharpen", summary: "unsharp mask: away from a binomial blur by amount (negative blurs); ffmpeg's unsharp on each channel, to the bit",
            parameters: [
                .init(Sharpen.Parameters.amount, positional: true),
                .init(Sharpen.Parameters.radius),
            ],
            examples: ["sharpen", "sharpen 0.8", "sharpen amount=1.5 radius=3"],
            build: { (values: [String: ParameterValue]) throws(ChainSyntaxError) -> any Filter in
                var filter = Sharpen()
                if let amount = values[Sharpen.Parameters.amount] { filter.amount = amount }
                if let radius = values[Sharpen.Parameters.radius] { filter.radius = radius }
                return filter
            }),
        FilterDefinition(
            name: "grayscale", summary: "no colour: every pixel becomes its luma; bt709 (default) or bt601 weights (ffmpeg's format=gray)",
            parameters: [.init(Grayscale.Parameters.matrix, positional: true)],
            examples: ["grayscale", "grayscale bt601"],
            build: { (values: [String: ParameterValue]) throws(ChainSyntaxError) -> any Filter in
                Grayscale(matrix: values[Grayscale.Parameters.matrix] ?? Grayscale.Parameters.matrix.defaultValue)
            }),
        FilterDefinition(
            name: "overlay", summary: "a PNG with alpha over the picture (a logo): ffmpeg's overlay with format=rgb, to the bit at scale 1",
            parameters: [
                .init(key: "file", kind: .file("a PNG file"), positional: true, defaultValue: nil, summary: "the image; its alpha says where it covers"),
                .init(Overlay.Parameters.x),
                .init(Overlay.Parameters.y),
                .init(Overlay.Parameters.opacity),
                .init(Overlay.Parameters.scale),
                .init(Overlay.Parameters.alpha),
            ],
            examples: ["overlay logo.png x=right-16 y=top+16", "overlay logo.png x=center y=bottom-40 opacity=0.7 scale=0.5"],
            build: { (values: [String: ParameterValue]) throws(ChainSyntaxError) -> any Filter in
                guard case let .file(file)? = values["file"] else {
                    throw .missingParameter(filter: "overlay", key: "file", expected: "a PNG file, e.g. overlay logo.png")
                }
                let image: RGBAImage
                do throws(RGBAImage.LoadError) {
                    image = try RGBAImage.cachedPNG(file: file)
                } catch {
                    throw .badValue(filter: "overlay", key: "file", value: file.spelled, expected: "a readable PNG: \(error.reason)")
                }
                var overlay = Overlay(file: file, image: image)
                if let x = try anchor(values, Overlay.Parameters.x, filter: "overlay") { overlay.x = x }
                if let y = try anchor(values, Overlay.Parameters.y, filter: "overlay") { overlay.y = y }
                if let opacity = values[Overlay.Parameters.opacity] { overlay.opacity = opacity }
                if let scale = values[Overlay.Parameters.scale] { overlay.scale = scale }
                if let alpha = values[Overlay.Parameters.alpha] { overlay.alpha = alpha }
                return overlay
            }),
        FilterDefinition(
            name: "text", summary: "text drawn with FreeType; tokens {time} (hh:mm:ss.mmm), {pts}, {frame}, {date} (UTC wall clock), \\n for a new line",
            parameters: [
                .init(key: "text", kind: .text("the text, in double quotes when it has spaces"), positional: true, defaultValue: nil,
                      summary: "what to write"),
                .init(Text.Parameters.x),
                .init(Text.Parameters.y),
                .init(Text.Parameters.size),
                .init(Text.Parameters.color),
                .init(Text.Parameters.opacity),
                .init(key: "box", kind: .text("#RRGGBB or #RRGGBB@OPACITY, e.g. #000000@0.5"), positional: false, defaultValue: nil,
                      summary: "a box behind the text (default opacity \(formatNumber(Text.Parameters.boxOpacity.defaultValue!)))"),
                .init(Text.Parameters.padding),
                .init(key: "font", kind: .file("a TrueType/OpenType file"), positional: false, defaultValue: nil,
                      summary: "default: DejaVu Sans (fonts-dejavu-core), else Liberation Sans, FreeSans or Noto Sans"),
            ],
            examples: ["text \"{time}\" x=right-16 y=bottom-16 box=#000000", "text \"LIVE {date}\" size=24 color=#FF3030"],
            build: { (values: [String: ParameterValue]) throws(ChainSyntaxError) -> any Filter in
                guard case let .text(template)? = values["text"] else {
                    throw .missingParameter(filter: "text", key: "text", expected: "the text, e.g. text \"{time}\"")
                }
                let font: FontFile
                do throws(Text.FontError) {
                    if case let .file(file)? = values["font"] { font = FontFile(file) } else { font = try FontFile.findDefault() }
                    try Text.checkFont(font)
                } catch {
                    throw .badValue(filter: "text", key: "font", value: error.path ?? "(default)", expected: "a usable font: \(error.reason)")
                }
                let p = Text.Parameters.self
                var text = Text(template, font: font)
                if let x = try anchor(values, p.x, filter: "text") { text.x = x }
                if let y = try anchor(values, p.y, filter: "text") { text.y = y }
                if let size = values[p.size] { text.size = size }
                if let color = values[p.color] { text.color = color }
                if let opacity = values[p.opacity] { text.opacity = opacity }
                if let padding = values[p.padding] { text.padding = padding }
                if case let .text(spelled)? = values["box"] {
                    let parts = spelled.split(separator: "@", maxSplits: 1)
                    let opacity = parts.count == 2 ? Double(parts[1]) : p.boxOpacity.defaultValue
                    guard let colour = RGBColor(hex: String(parts[0])), let opacity, p.boxOpacity.range.contains(opacity) else {
                        throw .badValue(filter: "text", key: "box", value: spelled, expected: "#RRGGBB or #RRGGBB@OPACITY (\(p.boxOpacity.rangeText))")
                    }
                    (text.box, text.boxOpacity) = (colour, opacity)
                }
                return text
            }),
        FilterDefinition(
            name: "fade", summary: "fade in from a colour and/or out to it, by output time (ffmpeg's fade with st= and d=, to the bit)",
            parameters: [
                .init(key: "in", kind: .text("START,DURATION in seconds, e.g. 0,1.5"), positional: false, defaultValue: nil,
                      summary: "from the colour to the picture, starting at START"),
                .init(key: "out", kind: .text("START,DURATION in seconds, e.g. 58,2"), positional: false, defaultValue: nil,
                      summary: "from the picture to the colour, ending at START + DURATION"),
                .init(Fade.Parameters.color),
            ],
            examples: ["fade in=0,1", "fade in=0,1 out=9,1", "fade out=28,2 color=#FFFFFF"],
            build: { (values: [String: ParameterValue]) throws(ChainSyntaxError) -> any Filter in
                func window(_ key: String) throws(ChainSyntaxError) -> Fade.Window? {
                    guard case let .text(text)? = values[key] else { return nil }
                    guard let window = Fade.Window.parse(text) else {
                        throw .badValue(filter: "fade", key: key, value: text, expected: "START,DURATION in seconds (DURATION > 0), e.g. 0,1.5")
                    }
                    return window
                }
                let fadeIn = try window("in"), fadeOut = try window("out")
                guard fadeIn != nil || fadeOut != nil else {
                    throw .missingParameter(filter: "fade", key: "in", expected: "in=START,DURATION and/or out=START,DURATION")
                }
                return Fade(in: fadeIn, out: fadeOut, color: values[Fade.Parameters.color] ?? Fade.Parameters.color.defaultValue)
            }),
        FilterDefinition(
            name: "eq", summary: "brightness, contrast, saturation, gamma: ffmpeg's eq on the BT.709 limited-range Y′CbCr of the picture",
            parameters: [
                .init(Eq.Parameters.brightness),
                .init(Eq.Parameters.contrast),
                .init(Eq.Parameters.saturation),
                .init(Eq.Parameters.gamma),
            ],
            examples: ["eq brightness=0.06 saturation=1.3", "eq contrast=1.2 gamma=0.9"],
            build: { (values: [String: ParameterValue]) throws(ChainSyntaxError) -> any Filter in
                var eq = Eq()
                if let v = values[Eq.Parameters.brightness] { eq.brightness = v }
                if let v = values[Eq.Parameters.contrast] { eq.contrast = v }
                if let v = values[Eq.Parameters.saturation] { eq.saturation = v }
                if let v = values[Eq.Parameters.gamma] { eq.gamma = v }
                return eq
            }),
    ]

    /// The anchor given for `parameter`, nil when not given.
    static func anchor(_ values: [String: ParameterValue], _ parameter: ValueParameter<Anchor>, filter: String) throws(ChainSyntaxError) -> Anchor? {
        guard case let .text(spelled)? = values[parameter.key] else { return nil }
        guard let anchor = values[parameter] else {
            throw .badValue(filter: filter, key: parameter.key, value: spelled, expected: parameter.kind.expected)
        }
        return anchor
    }

    public static func definition(named name: String) -> FilterDefinition? {
        definitions.first { $0.name == name }
    }

    /// What every filter takes besides its own parameters: a timeline, and for filters that keep
    /// the picture's size, where they work. Listed by `livefilter filters`.
    public static let timelineParameters: [ParameterDefinition] = [
        .init(key: "enable", kind: .text("START-END[,START-END…] in seconds, e.g. 2-5,8-"), positional: false, defaultValue: nil,
              summary: "act only within these ranges of output time (each up to, not including, its end; 8- runs to the end)"),
        .init(key: "region", kind: .text("x,y,w,h in pixels or %, e.g. 10%,10%,30%,20%"), positional: false, defaultValue: nil,
              summary: "act only inside this box of the picture entering the filter (filters that keep the size)"),
        .init(ScheduledFilter.Parameters.shape),
        .init(ScheduledFilter.Parameters.feather),
        .init(key: "track", kind: .file("a .csv (header time,x,y,w,h[,id]) or .json file of boxes over time"), positional: false, defaultValue: nil,
              summary: "act inside boxes over time, interpolated linearly between a box's keyframes"),
        .init(Track.Parameters.hold),
    ]

    /// Parses one filter from its whitespace-separated tokens; `files` says which files it may read.
    static func parseFilter(_ tokens: [ChainToken], files: ChainFileAccess) throws(ChainSyntaxError) -> any Filter {
        let parsed = try arguments(tokens, files: files)
        guard !parsed.timeline.isEmpty || !parsed.animated.isEmpty else { return try parsed.definition.build(parsed.values) }
        let options = try timelineOptions(parsed.timeline, files: parsed.timelineFiles, filter: parsed.definition.name)
        return try ScheduledFilter(definition: parsed.definition, values: parsed.values, animated: parsed.animated,
                                   spelled: parsed.spelled, options: options)
    }

    /// One filter's arguments, checked and assigned to their keys.
    struct Arguments {
        var definition: FilterDefinition
        var values: [String: ParameterValue] = [:]
        var animated: [String: Keyframes] = [:]
        var timeline: [String: String] = [:]
        /// The files the timeline options name (`track=`), admitted.
        var timelineFiles: [String: ChainFile] = [:]
        /// Every argument as `key=text`, in the order written (positional values with their key); a
        /// file as admitted (within a folder: its real path).
        var spelled: [String] = []
    }

    /// The arguments of one filter, each file among them admitted by `files` before anything reads
    /// it (`.unrestricted` admits without touching the file system).
    static func arguments(_ tokens: [ChainToken], files: ChainFileAccess) throws(ChainSyntaxError) -> Arguments {
        let name = tokens[0].text
        guard let definition = definition(named: name) else {
            throw .unknownFilter(name: name, validNames: definitions.map(\.name))
        }
        var values: [String: ParameterValue] = [:]
        var animated: [String: Keyframes] = [:]
        var timeline: [String: String] = [:]
        var timelineFiles: [String: ChainFile] = [:]
        var spelled: [String] = []
        /// `value` for `parameter`; a file admitted by `files` (nil: not a file), and its spelling then.
        func admit(_ text: String, _ parameter: ParameterDefinition) throws(ChainSyntaxError) -> ChainFile? {
            guard case .file = parameter.kind else { return nil }
            let file = try files.admit(text, filter: name, key: parameter.key)
            spelled[spelled.count - 1] = "\(parameter.key)=\(ChainTokenizer.quoted(file.path))"
            return file
        }
        func keyframes(_ text: String, _ parameter: ParameterDefinition) -> Keyframes? {
            guard parameter.animates, text.contains("@") else { return nil }
            return Keyframes.parse(text) { value in
                switch parse(value, as: parameter.kind) {
                case let .number(v)?: v
                case let .integer(v)?: Double(v)
                default: nil
                }
            }
        }
        func initial(_ frames: Keyframes, _ parameter: ParameterDefinition) -> ParameterValue {
            if case .integer = parameter.kind { return .integer(Int(frames.keys[0].value.rounded())) }
            return .number(frames.keys[0].value)
        }
        for token in tokens.dropFirst() {
            if let key = token.key {
                let text = token.value
                spelled.append("\(key)=\(ChainTokenizer.quoted(text))")
                guard let parameter = definition.parameters.first(where: { $0.key == key }) else {
                    guard timelineParameters.contains(where: { $0.key == key }) else {
                        throw .unknownKey(filter: name, key: key,
                                          validKeys: definition.parameters.map(\.key) + timelineParameters.map(\.key))
                    }
                    guard timeline[key] == nil else { throw .duplicateKey(filter: name, key: key) }
                    timeline[key] = text
                    if let option = timelineParameters.first(where: { $0.key == key }), let file = try admit(text, option) {
                        timelineFiles[key] = file
                    }
                    continue
                }
                guard values[key] == nil else { throw .duplicateKey(filter: name, key: key) }
                if let frames = keyframes(text, parameter) {
                    animated[key] = frames
                    values[key] = initial(frames, parameter)
                    continue
                }
                guard let value = parse(text, as: parameter.kind) else {
                    let expected = parameter.animates ? "\(parameter.expected), or keyframes V@T,V@T,… (seconds)" : parameter.expected
                    throw .badValue(filter: name, key: key, value: text, expected: expected)
                }
                values[key] = try admit(text, parameter).map { .file($0) } ?? value
            } else {
                let text = token.text
                let open = definition.parameters.filter { $0.positional && values[$0.key] == nil }
                if let parameter = open.first(where: { keyframes(text, $0) != nil }), let frames = keyframes(text, parameter) {
                    animated[parameter.key] = frames
                    values[parameter.key] = initial(frames, parameter)
                    spelled.append("\(parameter.key)=\(ChainTokenizer.quoted(text))")
                    continue
                }
                guard let (parameter, value) = open.lazy.compactMap({ p in parse(text, as: p.kind).map { (p, $0) } }).first else {
                    if let parameter = open.first, open.count == 1 {
                        throw .badValue(filter: name, key: parameter.key, value: text, expected: parameter.expected)
                    }
                    let expected = open.isEmpty ? "no more values (use key=value: \(definition.parameters.map(\.key).joined(separator: ", ")))"
                        : open.map { "\($0.key): \($0.expected)" }.joined(separator: "; or ")
                    throw .unexpectedValue(filter: name, value: text, expected: expected)
                }
                spelled.append("\(parameter.key)=\(ChainTokenizer.quoted(text))")
                values[parameter.key] = try admit(text, parameter).map { .file($0) } ?? value
            }
        }
        return Arguments(definition: definition, values: values, animated: animated, timeline: timeline, timelineFiles: timelineFiles,
                         spelled: spelled)
    }

    private static func timelineOptions(_ text: [String: String], files: [String: ChainFile],
                                        filter name: String) throws(ChainSyntaxError) -> ScheduledFilter.Options {
        func expected(_ key: String) -> String { timelineParameters.first { $0.key == key }!.expected }
        var options = ScheduledFilter.Options()
        if let value = text["enable"] {
            guard let ranges = EnableRanges.parse(value) else {
                throw .badValue(filter: name, key: "enable", value: value, expected: expected("enable"))
            }
            options.enable = ranges
        }
        if let value = text["region"] {
            guard let region = RegionSpec.parse(value) else {
                throw .badValue(filter: name, key: "region", value: value, expected: expected("region"))
            }
            options.region = region
        }
        if let value = text["shape"] {
            guard let shape = parse(value, as: ScheduledFilter.Parameters.shape) else {
                throw .badValue(filter: name, key: "shape", value: value, expected: expected("shape"))
            }
            options.shape = shape
        }
        if let value = text["feather"] {
            guard let feather = parse(value, as: ScheduledFilter.Parameters.feather) else {
                throw .badValue(filter: name, key: "feather", value: value, expected: expected("feather"))
            }
            options.feather = feather
        }
        var hold = Track.Parameters.hold.defaultValue!
        if let value = text["hold"] {
            guard let seconds = parse(value, as: Track.Parameters.hold) else {
                throw .badValue(filter: name, key: "hold", value: value, expected: expected("hold"))
            }
            guard text["track"] != nil else { throw .conflict(filter: name, message: "hold= is for track=; give a track file") }
            hold = seconds
        }
        if let file = files["track"] {
            guard options.region == nil else {
                throw .conflict(filter: name, message: "give region= or track=, not both")
            }
            do {
                options.track = try Track.load(file: file, hold: hold)
            } catch {
                throw .badValue(filter: name, key: "track", value: file.spelled, expected: "a readable track file: \(error.reason)")
            }
            options.trackFile = file
        }
        if (text["shape"] != nil || text["feather"] != nil) && !options.confined {
            throw .conflict(filter: name, message: "shape= and feather= shape a region; give region= or track=")
        }
        return options
    }

    static func parse(_ text: String, as kind: ParameterDefinition.Kind) -> ParameterValue? {
        switch kind {
        case let .number(range):
            guard let v = Double(text), v.isFinite, range.contains(v) else { return nil }
            return .number(v)
        case let .integer(range):
            guard let v = Int(text), range.contains(v) else { return nil }
            return .integer(v)
        case let .choice(values):
            return values.contains(text) ? .choice(text) : nil
        case .size:
            return parseSize(Substring(text)).map { .size($0) }
        case .color:
            return RGBColor(hex: text).map { .color($0) }
        case .rectangle:
            let parts = text.split(separator: "+", omittingEmptySubsequences: false)
            guard parts.count == 3, let size = parseSize(parts[0]),
                  let x = Int(parts[1]), let y = Int(parts[2]), x >= 0, y >= 0 else { return nil }
            return .rectangle(PixelRect(x: x, y: y, width: size.width, height: size.height))
        case .text, .file:
            // A file is admitted by the caller, which knows the parse's file access.
            return text.isEmpty ? nil : .text(text)
        }
    }

    static func parse<Value>(_ text: String, as parameter: NumericParameter<Value>) -> Value? {
        parse(text, as: parameter.kind).flatMap(parameter.read)
    }

    static func parse<Value>(_ text: String, as parameter: ValueParameter<Value>) -> Value? {
        parse(text, as: parameter.kind).flatMap(parameter.read)
    }

    private static func parseSize(_ text: Substring) -> FrameSize? {
        let parts = text.split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]),
              (1...maxSide).contains(w), (1...maxSide).contains(h) else { return nil }
        return FrameSize(width: w, height: h)
    }
}
