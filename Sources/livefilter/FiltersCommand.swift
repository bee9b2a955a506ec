import ArgumentParser
import Filters
import Foundation

struct FiltersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "filters",
        abstract: "List every filter of the chain grammar with its parameters, ranges and defaults.",
        discussion: "Printed from the same table the chain parser is built from (FilterCatalog.definitions).")

    @Flag(help: "Print JSON (schema livefilter.filters/1) instead of text.")
    var json = false

    func run() throws {
        let listing = FilterListing(FilterCatalog.definitions)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(listing), as: UTF8.self))
        } else {
            print(listing.text)
        }
    }
}

/// What `filters` prints, as a value so text and JSON say the same.
struct FilterListing: Encodable {
    struct Parameter: Encodable {
        var key: String
        /// number, integer, choice, size, color or rectangle.
        var kind: String
        var minimum: Double?
        var maximum: Double?
        var choices: [String]?
        /// Whether the value may be written without `key=`.
        var positional: Bool
        var defaultValue: String?
        /// The accepted form, as error messages say it.
        var expected: String
        var summary: String
        /// Whether the value may be keyframed, `V@T,V@T,…` (linear between keys).
        var animates: Bool

        enum CodingKeys: String, CodingKey {
            case key, kind, minimum, maximum, choices, positional, expected, summary, animates
            case defaultValue = "default"
        }
    }

    struct Filter: Encodable {
        var name: String
        var summary: String
        var parameters: [Parameter]
        var examples: [String]
    }

    var schema = "livefilter.filters/1"
    var grammar = "chain := filter ('|' filter)*; filter := name arg*; arg := value | key=value"
    var keyframes = "a number or integer parameter may be written V@T,V@T,… (T: seconds of output time; linear between keys, held before the first and after the last), e.g. sigma=0@0,12@2,12@8,0@10"
    /// Options every filter takes; region, shape, feather, track and hold only filters that keep the size.
    var timeline: [Parameter]
    var filters: [Filter]

    init(_ definitions: [FilterDefinition]) {
        filters = definitions.map { d in
            Filter(name: d.name, summary: d.summary, parameters: d.parameters.map(Self.parameter), examples: d.examples)
        }
        timeline = FilterCatalog.timelineParameters.map { p in
            var out = Self.parameter(p)
            out.animates = false  // the options themselves are not keyframed
            return out
        }
    }

    private static func parameter(_ p: ParameterDefinition) -> Parameter {
        var out = Parameter(key: p.key, kind: "", positional: p.positional, defaultValue: p.defaultValue,
                            expected: p.expected, summary: p.summary, animates: p.animates)
        switch p.kind {
        case let .number(range):
            out.kind = "number"
            (out.minimum, out.maximum) = (range.lowerBound, range.upperBound)
        case let .integer(range):
            out.kind = "integer"
            (out.minimum, out.maximum) = (Double(range.lowerBound), Double(range.upperBound))
        case let .choice(values):
            out.kind = "choice"
            out.choices = values
        case .size: out.kind = "size"
        case .color: out.kind = "color"
        case .rectangle: out.kind = "rectangle"
        case .text: out.kind = "text"
        case .file: out.kind = "file"
        }
        return out
    }

    /// One block per filter: name and summary, a row per parameter (key, how it may be written,
    /// the accepted values, the default, what it does), then examples.
    var text: String {
        var lines = ["Chain grammar: " + grammar, "Positional values may be written without key=, in the order listed.",
                     "Keyframes: " + keyframes + ".", ""]
        let all = filters + [Filter(name: "every filter", summary: "a timeline; region= … hold= only for filters that keep the picture's size",
                                    parameters: timeline, examples: ["invert enable=2-4", "blur sigma=0@0,12@2 region=10%,10%,30%,30% shape=ellipse feather=16",
                                                                     "pixelate size=24 track=plates.csv hold=0.5"])]
        for f in all {
            lines.append("\(f.name) — \(f.summary)")
            let keyWidth = max(5, f.parameters.map { $0.key.count + 2 }.max() ?? 0)
            let expectedWidth = f.parameters.map(\.expected.count).max() ?? 0
            let defaultWidth = f.parameters.map { ($0.defaultValue ?? "none").count }.max() ?? 0
            for p in f.parameters {
                let key = (p.positional ? "[\(p.key)=]" : "\(p.key)=")
                var row = "  " + key.padding(toLength: keyWidth + 3, withPad: " ", startingAt: 0)
                row += p.expected.padding(toLength: expectedWidth + 2, withPad: " ", startingAt: 0)
                row += "default " + (p.defaultValue ?? "none").padding(toLength: defaultWidth + 2, withPad: " ", startingAt: 0)
                row += p.summary + (p.animates ? " (keyframes)" : "")
                lines.append(row)
            }
            lines.append("  examples: " + f.examples.joined(separator: "  ·  "))
            lines.append("")
        }
        return lines.dropLast().joined(separator: "\n")
    }
}
