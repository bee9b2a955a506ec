import Filters
import Foundation
import Testing

/// Each parameter's range and default are declared once, and the catalog lists them: what it says
/// must be what the grammar, a chain edit, the player's sliders and the filters themselves accept.
/// Checked by probing each of them at every listed bound and just past it.
@Suite struct CatalogTests {
    /// One numeric parameter of the grammar: a filter's own, or an option every filter takes.
    struct Probe: Sendable, CustomTestStringConvertible {
        var filter: String
        var parameter: ParameterDefinition
        /// The options are tried on `invert`, with the track file they need.
        var isTimeline: Bool
        var testDescription: String { "\(filter).\(parameter.key)" }
    }

    static let probes: [Probe] = FilterCatalog.definitions.flatMap { d in
        d.parameters.map { Probe(filter: d.name, parameter: $0, isTimeline: false) }
    } + FilterCatalog.timelineParameters.map { Probe(filter: "invert", parameter: $0, isTimeline: true) }

    static let ranged = probes.filter { $0.parameter.animates }
    static let defaulted = probes.filter { $0.parameter.defaultValue != nil }

    /// Lower and upper bound as the grammar reads them, and the nearest values outside.
    static func bounds(_ kind: ParameterDefinition.Kind) -> (inside: [String], outside: [String], range: String) {
        func plain(_ v: Double) -> String { v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(v) }
        switch kind {
        case let .number(r):
            return ([String(r.lowerBound), String(r.upperBound)], [String(r.lowerBound.nextDown), String(r.upperBound.nextUp)],
                    "\(plain(r.lowerBound))…\(plain(r.upperBound))")
        case let .integer(r):
            return ([String(r.lowerBound), String(r.upperBound)], [String(r.lowerBound - 1), String(r.upperBound + 1)],
                    "\(r.lowerBound)…\(r.upperBound)")
        default:
            Issue.record("not a numeric kind: \(kind)")
            return ([], [], "")
        }
    }

    static let folder: URL = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-tests-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }()

    /// A box from 0 s, so `hold` decides how long it stays.
    static func trackFile() throws -> String {
        let path = folder.appendingPathComponent("box.csv").path
        try "time,x,y,w,h\n0,8,8,24,16\n".write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The least a filter needs besides the parameter under test, as `key=value` pairs so that
    /// parameter can take a key's place (the catalog's examples show more).
    static func needs(_ probe: Probe) throws -> [(String, String)] {
        if probe.isTimeline { return [("track", try trackFile())] }
        return switch probe.filter {
        case "blur": [("sigma", "1")]
        case "rotate": [("angle", "30")]
        case "scale": [("size", "32x24")]
        case "crop": [("rect", "32x24+2+2")]
        case "pixelate": [("size", "4")]
        case "boxblur": [("radius", "2")]
        case "overlay": [("file", try OverlayTests.png("catalog-logo.png", size: "16x8", graph: "format=rgba,geq=r='X*16':g=90:b='Y*30':a='X*16'", format: "rgba"))]
        case "text": [("text", "Ag")]
        case "fade": [("in", "0,1")]
        default: []
        }
    }

    /// `filter` with its needs, `key=value` replacing or joining them.
    static func chain(_ probe: Probe, _ key: String? = nil, _ value: String? = nil) throws -> String {
        var arguments = try needs(probe).filter { $0.0 != key }
        if let key, let value { arguments.append((key, value)) }
        return ([probe.filter] + arguments.map { "\($0)=\($1)" }).joined(separator: " ")
    }

    /// Whether the error refuses `key`'s value (rather than, say, a combination of parameters).
    static func refusesValue(_ error: ChainSyntaxError, of key: String) -> Bool {
        switch error {
        case let .badValue(_, refused, _, _): refused == key
        case .unexpectedValue: true
        default: false
        }
    }

    @Test("a value just past either end of a listed range is refused, naming the value and the range; the ends themselves are accepted",
          arguments: ranged)
    func grammarAcceptsExactlyTheListedRange(probe: Probe) throws {
        let key = probe.parameter.key, (inside, outside, range) = Self.bounds(probe.parameter.kind)
        for value in outside {
            // Alone: the value is read before the filter checks what it needs.
            for text in ["\(probe.filter) \(key)=\(value)", try Self.chain(probe, key, value)] {
                #expect(throws: ChainSyntaxError.self, "\(text)") { try FilterChain(parsing: text) }
                do {
                    _ = try FilterChain(parsing: text)
                } catch {
                    #expect(Self.refusesValue(error, of: key) && error.description.contains(value), "\(text): \(error)")
                    #expect(error.description.contains(range), "\(text): \(error) does not name \(range)")
                }
            }
        }
        for value in inside {
            let text = try Self.chain(probe, key, value)
            do {
                let chain = try FilterChain(parsing: text)
                // What the grammar accepts, the filter accepts too (a 1024² picture fits every geometry).
                #expect(throws: Never.self, "\(text)") { try chain.outputSize(for: FrameSize(1024, 1024)) }
            } catch {
                // Only combinations may be refused (blur's x without y, w, h; scale's two sizes).
                #expect(!Self.refusesValue(error, of: key), "\(text): \(error)")
            }
        }
    }

    @Test("a chain edit FILTER.key=value is checked against the same range", arguments: ranged)
    func chainEditsCheckTheListedRange(probe: Probe) throws {
        let key = probe.parameter.key, (inside, outside, range) = Self.bounds(probe.parameter.kind)
        let base = try FilterChain(parsing: try Self.chain(probe))
        for value in outside {
            do {
                let edited = try base.applying("1.\(key)=\(value)")
                Issue.record("1.\(key)=\(value) applied: \(edited)")
            } catch {
                #expect(Self.refusesValue(error, of: key) && error.description.contains(range), "\(key)=\(value): \(error)")
            }
        }
        for value in inside {
            do {
                _ = try base.applying("1.\(key)=\(value)")
            } catch {
                #expect(!Self.refusesValue(error, of: key), "\(key)=\(value): \(error)")
            }
        }
    }

    @Test("writing a parameter's listed default gives the same filter as leaving it out", arguments: defaulted)
    func defaultsRoundTrip(probe: Probe) throws {
        let key = probe.parameter.key, value = try #require(probe.parameter.defaultValue)
        let omitted = try FilterChain(parsing: try Self.chain(probe)), given = try FilterChain(parsing: try Self.chain(probe, key, value))
        if !probe.isTimeline {
            #expect(given.description == omitted.description)
        }
        // The same pictures, also where time matters (a fade, how long a track's box is held).
        let image = Images.natural(64, 48)
        let a = try ChainRenderer(chain: omitted, inputSize: image.size), b = try ChainRenderer(chain: given, inputSize: image.size)
        for seconds in [0, 0.5, 1.5, 4] {
            let time = FrameTime(seconds: seconds, frame: Int(seconds * 25))
            let left = a.render(image, at: time), right = b.render(image, at: time)
            #expect(left.size == right.size && TimelineTests.maxDifference(left, right) == 0, "\(key)=\(value) at \(seconds) s")
        }
    }

    @Test("a parameter with no default, left out, is named with what it takes and its range")
    func missingParametersNameTheirRange() throws {
        for probe in Self.ranged where !probe.isTimeline && probe.parameter.defaultValue == nil {
            guard try Self.needs(probe).contains(where: { $0.0 == probe.parameter.key }) else { continue }
            let text = try Self.chain(probe, probe.parameter.key)
            #expect(throws: ChainSyntaxError.self, "\(text)") { try FilterChain(parsing: text) }
            do {
                _ = try FilterChain(parsing: text)
            } catch {
                guard case let .missingParameter(_, key, _) = error else { Issue.record("\(text): \(error)"); continue }
                #expect(key == probe.parameter.key)
                #expect(error.description.contains(Self.bounds(probe.parameter.kind).range) && error.description.contains(probe.parameter.summary),
                        "\(text): \(error)")
            }
        }
    }

    @Test("the player's sliders: each numeric parameter's ends are what a chain edit accepts, its value the one written or the default")
    func sliderBoundsAreTheParsers() throws {
        let logo = try Self.needs(Self.probes.first { $0.filter == "overlay" }!)[0].1
        let chain = try FilterChain(parsing: "blur 3 | rotate 30 | pixelate 4 | boxblur 2 | sharpen 0.5 | eq gamma=1.2 | text Ag | overlay \(logo)")
        let sliders = chain.numericParameters
        #expect(Set(sliders.map(\.filter)) == ["blur", "rotate", "pixelate", "boxblur", "sharpen", "eq", "text", "overlay"])
        for slider in sliders {
            let edit = "\(slider.position).\(slider.key)"
            #expect((slider.minimum...slider.maximum).contains(slider.value), "\(edit)")
            let ends = slider.integer ? [slider.minimum, slider.maximum].map { String(Int($0)) } : [String(slider.minimum), String(slider.maximum)]
            for end in ends { #expect(throws: Never.self, "\(edit)=\(end)") { try chain.applying("\(edit)=\(end)") } }
            let past = slider.integer ? [String(Int(slider.minimum) - 1), String(Int(slider.maximum) + 1)]
                : [String(slider.minimum.nextDown), String(slider.maximum.nextUp)]
            for value in past { #expect(throws: ChainSyntaxError.self, "\(edit)=\(value)") { try chain.applying("\(edit)=\(value)") } }
            // Not written: the slider starts at the default, which is the filter's own.
            let definition = try #require(FilterCatalog.definition(named: slider.filter)?.parameters.first { $0.key == slider.key })
            if let spelled = definition.defaultValue, !chain.filters[slider.position - 1].description.contains("\(slider.key)=") {
                #expect(slider.value == Double(spelled), "\(edit)")
            }
        }
        #expect(sliders.contains { $0.filter == "eq" && $0.key == "gamma" && $0.value == 1.2 })
        #expect(sliders.contains { $0.filter == "sharpen" && $0.key == "radius" && $0.value == 2 && $0.integer })
    }

    /// A filter built in Swift, without the grammar, with one parameter set to `value`.
    struct OwnCheck: Sendable, CustomTestStringConvertible {
        var filter: String, key: String
        var make: @Sendable (Double) -> any Filter
        var testDescription: String { "\(filter).\(key)" }
    }

    static let font = FontFile(path: FontFile.candidates[0])
    static let ownChecks: [OwnCheck] = [
        OwnCheck(filter: "blur", key: "sigma") { GaussianBlur(sigma: $0) },
        OwnCheck(filter: "rotate", key: "angle") { Rotate(degrees: $0) },
        OwnCheck(filter: "pixelate", key: "size") { Pixelate(size: Int($0)) },
        OwnCheck(filter: "boxblur", key: "radius") { BoxBlur(radius: Int($0)) },
        OwnCheck(filter: "boxblur", key: "power") { BoxBlur(radius: 1, power: Int($0)) },
        OwnCheck(filter: "sharpen", key: "amount") { Sharpen(amount: $0) },
        OwnCheck(filter: "sharpen", key: "radius") { Sharpen(radius: Int($0)) },
        OwnCheck(filter: "eq", key: "brightness") { Eq(brightness: $0) },
        OwnCheck(filter: "eq", key: "contrast") { Eq(contrast: $0) },
        OwnCheck(filter: "eq", key: "saturation") { Eq(saturation: $0) },
        OwnCheck(filter: "eq", key: "gamma") { Eq(gamma: $0) },
        OwnCheck(filter: "text", key: "size") { Text("Ag", size: Int($0), font: font) },
        OwnCheck(filter: "text", key: "opacity") { Text("Ag", opacity: $0, font: font) },
        OwnCheck(filter: "text", key: "padding") { Text("Ag", padding: Int($0), font: font) },
        OwnCheck(filter: "overlay", key: "opacity") { Overlay(path: "dot", image: RGBAImage(width: 1, height: 1, pixels: [0, 0, 0, 255]), opacity: $0) },
        OwnCheck(filter: "overlay", key: "scale") { Overlay(path: "dot", image: RGBAImage(width: 1, height: 1, pixels: [0, 0, 0, 255]), scale: $0) },
    ]

    @Test("a filter made in Swift refuses what the listing refuses, with a message naming the parameter and its range", arguments: ownChecks)
    func filtersCheckTheListedRange(check: OwnCheck) throws {
        let parameter = try #require(FilterCatalog.definition(named: check.filter)?.parameters.first { $0.key == check.key })
        let range: ClosedRange<Double>, outside: [Double]
        switch parameter.kind {
        case let .number(r): (range, outside) = (r, [r.lowerBound.nextDown, r.upperBound.nextUp])
        case let .integer(r): (range, outside) = (Double(r.lowerBound)...Double(r.upperBound), [Double(r.lowerBound - 1), Double(r.upperBound + 1)])
        default: Issue.record("\(check) is not numeric"); return
        }
        let picture = FrameSize(1024, 1024), words = Self.bounds(parameter.kind).range
        for value in [range.lowerBound, range.upperBound] {
            #expect(throws: Never.self, "\(check) = \(value)") { try check.make(value).outputSize(for: picture) }
        }
        for value in outside {
            do {
                _ = try check.make(value).outputSize(for: picture)
                Issue.record("\(check) = \(value) accepted")
            } catch {
                #expect(error.description.contains("\(check.key) must be \(words)"), "\(error)")
            }
        }
    }

    @Test("every catalog parameter with a range has a default inside it, and the Swift initialisers use the same defaults")
    func defaultsAreInsideTheirRanges() throws {
        for probe in Self.defaulted {
            let value = try #require(probe.parameter.defaultValue)
            switch probe.parameter.kind {
            case let .number(r): #expect(Double(value).map(r.contains) == true, "\(probe)")
            case let .integer(r): #expect(Int(value).map(r.contains) == true, "\(probe)")
            case let .choice(names): #expect(names.contains(value), "\(probe)")
            default: break
            }
        }
        // The grammar's filter with nothing written is the Swift initialiser's with nothing given.
        #expect(try FilterChain(parsing: "sharpen").filters[0] as? Sharpen == Sharpen())
        #expect(try FilterChain(parsing: "eq").filters[0] as? Eq == Eq())
        #expect(try FilterChain(parsing: "boxblur 3").filters[0] as? BoxBlur == BoxBlur(radius: 3))
        #expect(try FilterChain(parsing: "rotate 30").filters[0] as? Rotate == Rotate(degrees: 30))
        #expect(try FilterChain(parsing: "scale 64x48").filters[0] as? Scale == Scale(width: 64, height: 48))
        #expect(try FilterChain(parsing: "mirror").filters[0] as? Mirror == Mirror())
        #expect(try FilterChain(parsing: "grayscale").filters[0] as? Grayscale == Grayscale())
        #expect(try FilterChain(parsing: "fade in=0,1").filters[0] as? Fade == Fade(in: Fade.Window(start: 0, duration: 1)))
        #expect(try FilterChain(parsing: "text Ag").filters[0] as? Text == Text("Ag", font: try FontFile.findDefault()))
    }
}
