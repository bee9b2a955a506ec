import Foundation
import Pipeline

/// How progress is shown.
enum ProgressStyle: String, CaseIterable {
    /// A bar when stderr is a terminal, else nothing.
    case auto
    case bar
    /// One JSON object per line (schema `livefilter.progress/1`).
    case json
    case none
}

/// One line of `--progress json`. Field names are part of the versioned schema.
struct ProgressRecord: Encodable {
    var schema = "livefilter.progress/1"
    var phase: String
    var time: Double
    var duration: Double?
    var fraction: Double?
    var framesDecoded: Int
    var framesWritten: Int
    var ticks: Int
    var filtered: Int
    var dropped: Int
    var repeated: Int
    var fps: Double
    var speed: Double
    var eta: Double?
    var bytes: Int64
    var elapsed: Double
    /// Milliseconds per frame in each stage so far.
    var stageMilliseconds: [String: Double]
    /// Milliseconds per filtered frame in each pass of the chain so far, by filter as written.
    var filterMilliseconds: [String: Double]

    init(_ p: JobProgress) {
        phase = p.phase.rawValue
        time = p.mediaTime.rounded(to: 3)
        duration = p.duration?.rounded(to: 3)
        fraction = p.phase == .finished ? 1 : p.fraction?.rounded(to: 4)
        framesDecoded = p.framesDecoded
        framesWritten = p.framesWritten
        ticks = p.ticks
        filtered = p.filtered
        dropped = p.dropped
        repeated = p.repeated
        fps = p.framesPerSecond.rounded(to: 2)
        speed = p.speed.rounded(to: 3)
        eta = p.phase == .running ? p.estimatedTimeRemaining?.rounded(to: 1) : 0
        bytes = p.bytes
        elapsed = p.elapsed.rounded(to: 3)
        stageMilliseconds = StageReport.perFrame(p.timings, decoded: p.framesDecoded, filtered: p.filtered, written: p.framesWritten)
        filterMilliseconds = StageReport.perFrame(p.filterPasses, filtered: p.filtered)
    }

    enum CodingKeys: String, CodingKey {
        case schema, phase, time, duration, fraction, ticks, filtered, dropped, repeated, fps, speed, eta, bytes, elapsed
        case framesDecoded = "frames_decoded", framesWritten = "frames_written", stageMilliseconds = "stage_ms"
        case filterMilliseconds = "filter_ms"
    }

    /// Every key on every line: what is not known yet (duration, fraction, eta of a live input) is null.
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schema, forKey: .schema)
        try c.encode(phase, forKey: .phase)
        try c.encode(time, forKey: .time)
        try c.encode(duration, forKey: .duration)
        try c.encode(fraction, forKey: .fraction)
        try c.encode(framesDecoded, forKey: .framesDecoded)
        try c.encode(framesWritten, forKey: .framesWritten)
        try c.encode(ticks, forKey: .ticks)
        try c.encode(filtered, forKey: .filtered)
        try c.encode(dropped, forKey: .dropped)
        try c.encode(repeated, forKey: .repeated)
        try c.encode(fps, forKey: .fps)
        try c.encode(speed, forKey: .speed)
        try c.encode(eta, forKey: .eta)
        try c.encode(bytes, forKey: .bytes)
        try c.encode(elapsed, forKey: .elapsed)
        try c.encode(stageMilliseconds, forKey: .stageMilliseconds)
        try c.encode(filterMilliseconds, forKey: .filterMilliseconds)
    }
}

enum StageReport {
    /// ms per frame for each stage: decode per decoded frame, RGB stages per filtered frame, encode per written frame.
    static func perFrame(_ t: StageTimings, decoded: Int, filtered: Int, written: Int) -> [String: Double] {
        var out: [String: Double] = [:]
        for stage in StageTimings.Stage.allCases {
            let frames = switch stage {
            case .demux, .decode: decoded
            case .toRGB, .filter, .toYUV: filtered
            case .encode, .mux: written
            }
            guard frames > 0 else { continue }
            out[stage.key] = (t.totalMilliseconds(stage) / Double(frames)).rounded(to: 3)
        }
        return out
    }

    /// ms per filtered frame for each pass of the chain, keyed by the filter as written (a fused run
    /// of mirrors and quarter turns is one pass, "rotate 90 + mirror horizontal"); a repeated name gets " #2".
    static func perFrame(_ passes: [FilterPassTime], filtered: Int) -> [String: Double] {
        guard filtered > 0 else { return [:] }
        var out: [String: Double] = [:]
        for pass in passes {
            var name = pass.name
            var n = 2
            while out[name] != nil { name = "\(pass.name) #\(n)"; n += 1 }
            out[name] = (Double(pass.nanoseconds) / 1e6 / Double(filtered)).rounded(to: 3)
        }
        return out
    }
}

/// Writes JSON progress lines to stderr or a file.
final class JSONProgressWriter {
    private let handle: FileHandle
    private let encoder: JSONEncoder

    init(path: String?) throws {
        if let path {
            guard FileManager.default.createFile(atPath: path, contents: nil), let h = FileHandle(forWritingAtPath: path) else {
                throw CommandFailure("cannot write the progress file '\(path)'", code: .outputNotWritable)
            }
            handle = h
        } else {
            handle = .standardError
        }
        encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    }

    func write(_ p: JobProgress) {
        guard let data = try? encoder.encode(ProgressRecord(p)) else { return }
        handle.write(data + Data("\n".utf8))
    }
}

extension Double {
    func rounded(to places: Int) -> Double {
        let f = Foundation.pow(10, Double(places))
        return (self * f).rounded() / f
    }
}
