import HLS
import ArgumentParser
import Foundation
import MediaIO
import Pipeline

struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Show an input's streams, rotation, frame rate, duration and bitrate.")

    @Argument(help: "Input file or URL.")
    var input: String

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @Option(help: "Variant of a master playlist: highest, lowest, N or max-bandwidth=B.")
    var variant: VariantChoice = .highest

    func run() async throws {
        FFmpegLog.setLevel(.quiet)
        var options = InputOptions()
        options.variant = variant
        let demuxer: Demuxer
        do {
            // On a thread of its own, as a run opens its input.
            demuxer = try await Demuxer.open(url: input, options: options)
        } catch {
            throw CommandFailure(error)
        }
        let report = ProbeReport(demuxer)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            print(report.text)
        }
    }
}

/// What `probe` prints, as a value so text and JSON say the same.
struct ProbeReport: Codable {
    struct Video: Codable {
        var codec: String
        var width: Int
        var height: Int
        var pixelFormat: String
        var frameRate: String?
        var rotation: Double
        var displayWidth: Int
        var displayHeight: Int
        var bitRate: Int?
        var frames: Int?
    }
    struct Audio: Codable {
        var codec: String
        var sampleRate: Int
        var channels: Int
        var bitRate: Int?
    }
    var schemaVersion = 1
    var input: String
    var format: String
    var duration: Double?
    var bitRate: Int?
    var live: Bool
    var variant: String?
    var video: Video
    var audio: Audio?

    init(_ d: Demuxer) {
        input = d.url
        format = d.formatName
        duration = d.duration
        bitRate = d.bitRate
        live = d.isLive
        if let v = d.chosenVariant {
            variant = "\(v.index + 1) of \(v.count)" + (v.bandwidth.map { ", \($0) bit/s" } ?? "")
        }
        let v = d.video
        // The size `run` makes upright: the same orientation rule (any angle, mirrored matrices).
        let display = (try? OrientationFix(video: v).outputSize(for: v.size)) ?? v.size
        video = Video(codec: v.codecName, width: v.size.width, height: v.size.height, pixelFormat: v.pixelFormat.name,
                      frameRate: v.frameRate?.description, rotation: v.rotationClockwise,
                      displayWidth: display.width, displayHeight: display.height,
                      bitRate: v.bitRate, frames: v.frameCount)
        audio = d.audio.map { Audio(codec: $0.codecName, sampleRate: $0.sampleRate, channels: $0.channels, bitRate: $0.bitRate) }
    }

    var text: String {
        var lines = ["input     \(input) (\(format)\(live ? ", live" : ""))"]
        if let variant { lines.append("variant   \(variant)") }
        lines.append("duration  " + (duration.map { String(format: "%.3f s", $0) } ?? "unknown"))
        if let bitRate { lines.append("bitrate   \(Format.bitRate(Double(bitRate)))") }
        var v = "video     \(video.codec) \(video.width)x\(video.height) \(video.pixelFormat)"
        if let fps = video.frameRate { v += ", \(fps) fps" }
        if let frames = video.frames { v += ", \(frames) frames" }
        if let b = video.bitRate { v += ", \(Format.bitRate(Double(b)))" }
        lines.append(v)
        if video.rotation != 0 {
            let r = Int(video.rotation.rounded())
            let turn = r < 0 ? "\(-r)° counter-clockwise" : "\(r)° clockwise"
            lines.append("rotation  tagged: turn \(turn) to display (\(video.displayWidth)x\(video.displayHeight))")
        }
        if let a = audio {
            lines.append("audio     \(a.codec) \(a.sampleRate) Hz, \(a.channels) ch" + (a.bitRate.map { ", \(Format.bitRate(Double($0)))" } ?? ""))
        } else {
            lines.append("audio     none")
        }
        return lines.joined(separator: "\n")
    }
}
