import Foundation
import Pipeline

/// A one-line progress bar on stderr, redrawn in place: percent, frames, fps, speed, ETA.
final class ProgressBar {
    let enabled: Bool
    private var drawn = false

    init(enabled: Bool) { self.enabled = enabled }

    func update(_ p: JobProgress) {
        guard enabled else { return }
        var line = ""
        if let fraction = p.fraction {
            let width = 24
            let filled = Int((fraction * Double(width)).rounded(.down))
            line += "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] "
            line += String(format: "%3.0f%%  ", fraction * 100)
        } else {
            line += Format.duration(p.mediaTime) + "  "
        }
        line += "frame \(p.framesWritten)  " + String(format: "%.1f fps  %.2fx", p.framesPerSecond, p.speed)
        if let eta = p.estimatedTimeRemaining { line += "  ETA " + Format.duration(eta) }
        Terminal.write("\r" + line + "\u{1B}[K")
        drawn = true
    }

    func clear() {
        if drawn { Terminal.write("\r\u{1B}[K") }
        drawn = false
    }
}

enum SummaryPrinter {
    static func print(_ s: JobSummary, job: TranscodeJob) {
        var lines: [String] = []
        lines.append("output      \(s.outputPath)")
        var size = "\(s.inputSize) → \(s.outputSize)"
        if let from = s.roundedFrom { size += " (chain gave \(from); rounded down to even for yuv420p)" }
        if s.appliedRotation != 0 { size += ", rotated \(s.appliedRotation)° from the input's tag" }
        lines.append("video       \(size), \(s.videoPath.rawValue)")
        // A run whose pictures changed path: each interval, from its first tick.
        if s.videoPaths.count > 1 {
            for interval in s.videoPaths {
                lines.append(String(format: "  from %7.2f s  %@", interval.seconds, interval.path.rawValue))
            }
        }
        lines.append("audio       \(s.audioPath.rawValue)")
        var frames = "frames      \(s.framesDecoded) in, \(s.framesWritten) out, \(s.framesFiltered) filtered"
        frames += ", \(s.framesDropped) dropped, \(s.framesRepeated) repeated"
        if s.decodeErrors > 0 { frames += ", \(s.decodeErrors) decode errors" }
        lines.append(frames)
        if s.captions.bytesIn > 0 {
            let c = s.captions
            lines.append("captions    \(c.bytesIn) bytes in, \(c.bytesOut) out\(c.kept ? "" : " (--captions drop)")"
                         + (c.tripletsDropped > 0 ? ", \(c.tripletsDropped) triplets dropped" : ""))
        }
        lines.append("duration    " + String(format: "%.3f s", s.duration))
        lines.append("size        \(Format.bytes(s.bytes)), \(Format.bitRate(s.averageBitRate)) average")
        let speed = s.wallTime > 0 ? s.duration / s.wallTime : 0
        lines.append("time        " + String(format: "%.2f s wall, %.1f fps, %.2fx real time", s.wallTime,
                                                 s.wallTime > 0 ? Double(s.framesWritten) / s.wallTime : 0, speed))
        if s.outputs.count > 1 { lines.append("playlists   " + s.outputs.joined(separator: ", ")) }
        if s.interrupted { lines.append("interrupted: the output holds what was processed") }
        if s.truncated { lines.append("stopped at --max-duration: the rest of the input was not processed") }
        Terminal.line(lines.joined(separator: "\n"))
    }
}

extension SummaryPrinter {
    /// Milliseconds per frame in each stage: decode and encode per frame through the codec, the
    /// RGB stages per filtered frame.
    static func printStages(_ s: JobSummary) {
        let t = s.timings
        func perFrame(_ stage: StageTimings.Stage, _ frames: Int) -> String {
            frames > 0 ? String(format: "%7.2f", t.totalMilliseconds(stage) / Double(frames)) : "      -"
        }
        var lines = ["stage          ms/frame"]
        lines.append("demux          " + perFrame(.demux, s.framesDecoded))
        lines.append("decode         " + perFrame(.decode, s.framesDecoded))
        lines.append("to RGB         " + perFrame(.toRGB, s.framesFiltered))
        lines.append("filter chain   " + perFrame(.filter, s.framesFiltered))
        lines.append("to YUV         " + perFrame(.toYUV, s.framesFiltered))
        lines.append("encode         " + perFrame(.encode, s.framesWritten))
        lines.append("mux            " + perFrame(.mux, s.framesWritten))
        Terminal.line(lines.joined(separator: "\n"))
    }
}
