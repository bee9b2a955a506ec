import HLS
import ArgumentParser
import MediaIO
import Pipeline

/// A bit rate written as 800k, 2.5M or 1500000.
struct BitRate: ExpressibleByArgument, Equatable {
    var bitsPerSecond: Int

    init?(argument: String) {
        let text = argument.lowercased()
        var multiplier = 1.0
        var digits = Substring(text)
        if text.hasSuffix("k") { multiplier = 1e3; digits = digits.dropLast() }
        else if text.hasSuffix("m") { multiplier = 1e6; digits = digits.dropLast() }
        guard let value = Double(digits), value.isFinite, value > 0 else { return nil }
        let bps = value * multiplier
        guard bps >= 1000, bps <= 1e9 else { return nil }
        bitsPerSecond = Int(bps.rounded())
    }
    static var defaultValueDescription: String { "e.g. 800k or 2.5M" }
}

extension Rational: ExpressibleByArgument {
    public init?(argument: String) {
        guard let r = Rational(parsing: argument), r.isPositive, r.doubleValue <= 1000 else { return nil }
        self = r
    }
}

extension KeyframeInterval: ExpressibleByArgument {
    public init?(argument: String) { self.init(parsing: argument) }
}

extension H264Profile: ExpressibleByArgument {}
extension EncoderSpeedPreset: ExpressibleByArgument {}
extension OrientationPolicy: ExpressibleByArgument {}
extension LiveStart: ExpressibleByArgument {}

extension VariantChoice: ExpressibleByArgument {
    public init?(argument: String) { self.init(parsing: argument) }
}
extension ProgressStyle: ExpressibleByArgument {}
extension ExportPreset: ExpressibleByArgument {}
extension Alignment.Mode: ExpressibleByArgument {}
extension HLSPlaylistKind: ExpressibleByArgument {}
extension HLSSegmentType: ExpressibleByArgument {}
extension Rendition: ExpressibleByArgument {
    public init?(argument: String) { self.init(parsing: argument) }
}

extension InputLossPolicy: ExpressibleByArgument {
    public init?(argument: String) {
        switch argument {
        case "end": self = .end
        case "hold": self = .hold
        default:
            guard argument.hasPrefix("slate="), argument.count > 6 else { return nil }
            self = .slate(path: String(argument.dropFirst(6)))
        }
    }

    public var defaultValueDescription: String { description }
}

extension OverloadPolicy: ExpressibleByArgument {}
