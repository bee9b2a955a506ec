import Foundation
import HLS
import Pipeline

/// The final report of a run (`--report FILE`), schema `livefilter.report/1`.
struct RunReport: Encodable {
    var schema = "livefilter.report/1"
    var input: String
    var output: String
    var chain: String
    var inputSize: String
    var outputSize: String
    var roundedFrom: String?
    var rotationApplied: Int
    var videoPath: String
    /// The path of each interval: one unless a live chain change re-planned it or the stream
    /// changed format mid-way (then those pictures went through RGB).
    var videoPaths: [PathInterval]
    var audioPath: String
    var frameRate: String?
    var framesDecoded: Int
    var framesWritten: Int
    var framesFiltered: Int
    var framesDropped: Int
    var framesRepeated: Int
    var decodeErrors: Int
    var duration: Double
    var bytes: Int64
    var averageBitRate: Double
    var wallTime: Double
    var interrupted: Bool
    var stageMilliseconds: [String: Double]
    var filterMilliseconds: [String: Double]
    var ticks: Ticks?
    /// Live chain changes (`--control`), each with the first tick it filtered.
    var chainChanges: [ChainChange]?
    /// An HLS input: what the reader did.
    var hlsInput: HLSInputReport?
    /// LL-HLS output of a live input: part published − its last picture's tick, and − its input's arrival (seconds).
    var partLatency: PartLatencyReport?
    /// A live channel (`--on-input-loss hold|slate`): each time its input was lost.
    var inputLosses: [InputLossReport]?
    /// A live run under `--overload adapt`: its steps, how far it went and what it shed.
    var overload: OverloadReport?
    /// A live input: pictures given up before the decoder's reordering delay, and when the newest
    /// pictures were decoded ([input timestamp s, Unix time s]), for latency measured from the origin.
    var liveDecoding: LiveDecodingReport?
    /// Closed captions (A/53 `cc_data`, `--captions keep|drop`): bytes the source's pictures
    /// carried, bytes written onto the output's, triplets the pacer had no room for.
    var captions: CaptionReport
    /// Ad markers and timed ranges (`--ad-markers`): each on the output tick that shows its source
    /// picture (seconds from the input's start and on the output), late ones placed on the next tick.
    var splices: SpliceReport

    struct SpliceReport: Encodable {
        var placed: [PlacedSplice]
        /// Cues whose picture never came: the input ended first.
        var unplaced: Int
    }

    struct CaptionReport: Encodable {
        var kept: Bool
        var bytesIn: Int
        var bytesOut: Int
        var tripletsDropped: Int
    }

    struct LiveDecodingReport: Encodable {
        var heldPicturesReleased: Int
        var decodedAt: [[Double]]
    }

    /// ISO 8601 with milliseconds: a loss's start is compared with other clocks' events.
    static var milliseconds: ISO8601DateFormatter {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f
    }

    struct OverloadReport: Encodable {
        struct Change: Encodable {
            var outputTime: Double
            var level: Int
            var steps: [String]
            var taken: Bool
            var reason: String
        }
        /// The plan's steps in the order they are taken (level n: the first n).
        var steps: [String]
        var maxLevel: Int
        var finalLevel: Int
        var changes: [Change]
        var picturesNotDecoded: Int
        var ticksShed: Int
        var encoderPresetChanges: Int
    }

    struct InputLossReport: Encodable {
        /// When it was declared lost (ISO 8601), and where the output was then (seconds).
        var began: String
        var outputTime: Double
        var seconds: Double
    }

    struct PartLatencyReport: Encodable {
        var parts: Int
        var fromTickP50: Double, fromTickP95: Double, fromInputP50: Double, fromInputP95: Double
    }

    struct HLSInputReport: Encodable {
        var playlistReloads: Int
        var blockingReloads: Int
        var reloadFailures: Int
        var segmentsRead: Int
        var partsRead: Int
        var segmentRetries: Int
        var segmentsSkipped: Int
        var gapsSkipped: Int
        var restarts: Int
        var bytesRead: Int
        /// How late a scheduled reload found each new segment, at most (seconds), p50 and p95.
        var reloadDelayP50: Double?
        var reloadDelayP95: Double?
    }

    struct PathInterval: Encodable {
        var fromTick: Int64
        var seconds: Double
        var path: String
    }

    struct ChainChange: Encodable {
        var tick: Int
        var seconds: Double
        var chain: String
    }

    struct Ticks: Encodable {
        var ticks: Int
        var lateTicks: Int
        var latencySkips: Int
        /// A live run: seconds from its first frame until it had worked through the frames waiting
        /// when it joined; nil for files and for a run that never caught up.
        var caughtUpAfter: Double?
        var maximumLatency: Double
        var latenessP50: Double
        var latenessP95: Double
        var latenessMax: Double
    }

    init(summary s: JobSummary, job: TranscodeJob) {
        // Reports are shipped and kept as log lines are: the input's secrets (a passphrase, a
        // token, a stream key) hidden the same way.
        input = job.inputURL.redactingSecrets
        output = s.outputPath
        chain = job.effectiveChain.description
        inputSize = s.inputSize.description
        outputSize = s.outputSize.description
        roundedFrom = s.roundedFrom?.description
        rotationApplied = s.appliedRotation
        videoPath = s.videoPath.rawValue
        videoPaths = s.videoPaths.map { PathInterval(fromTick: $0.fromTick, seconds: $0.seconds, path: $0.path.rawValue) }
        audioPath = s.audioPath.rawValue
        frameRate = job.usesTickClock ? job.outputRate.description : nil
        framesDecoded = s.framesDecoded
        framesWritten = s.framesWritten
        framesFiltered = s.framesFiltered
        framesDropped = s.framesDropped
        framesRepeated = s.framesRepeated
        decodeErrors = s.decodeErrors
        duration = s.duration.rounded(to: 4)
        bytes = s.bytes
        averageBitRate = s.averageBitRate.rounded()
        wallTime = s.wallTime.rounded(to: 3)
        interrupted = s.interrupted
        stageMilliseconds = StageReport.perFrame(s.timings, decoded: s.framesDecoded, filtered: s.framesFiltered, written: s.framesWritten)
        filterMilliseconds = StageReport.perFrame(s.filterPasses, filtered: s.framesFiltered)
        chainChanges = job.chainControl == nil ? nil
            : s.chainChanges.map { ChainChange(tick: $0.tick, seconds: $0.seconds.rounded(to: 4), chain: $0.chain) }
        hlsInput = s.hlsInput.map {
            HLSInputReport(playlistReloads: $0.playlistReloads, blockingReloads: $0.blockingReloads, reloadFailures: $0.reloadFailures,
                           segmentsRead: $0.segmentsRead, partsRead: $0.partsRead, segmentRetries: $0.segmentRetries,
                           segmentsSkipped: $0.segmentsSkipped, gapsSkipped: $0.gapsSkipped, restarts: $0.restarts,
                           bytesRead: $0.bytesRead, reloadDelayP50: $0.discoveryDelayP50?.rounded(to: 3),
                           reloadDelayP95: $0.discoveryDelayP95?.rounded(to: 3))
        }
        partLatency = s.partLatency.map {
            PartLatencyReport(parts: $0.parts, fromTickP50: $0.fromTickP50.rounded(to: 3), fromTickP95: $0.fromTickP95.rounded(to: 3),
                              fromInputP50: $0.fromInputP50.rounded(to: 3), fromInputP95: $0.fromInputP95.rounded(to: 3))
        }
        liveDecoding = s.decoding.map {
            LiveDecodingReport(heldPicturesReleased: $0.heldPicturesReleased,
                               decodedAt: $0.decodedAt.map { [$0.pts.rounded(to: 6), $0.at.rounded(to: 4)] })
        }
        inputLosses = job.inputLoss.keepsChannelUp ? s.inputLosses.map {
            InputLossReport(began: Self.milliseconds.string(from: $0.began), outputTime: $0.outputTime.rounded(to: 3),
                            seconds: $0.seconds.rounded(to: 3))
        } : nil
        overload = s.overload.map {
            OverloadReport(steps: $0.steps, maxLevel: $0.maxLevel, finalLevel: $0.finalLevel,
                           changes: $0.changes.map { .init(outputTime: $0.outputTime.rounded(to: 3), level: $0.level, steps: $0.steps, taken: $0.taken, reason: $0.reason) },
                           picturesNotDecoded: $0.picturesNotDecoded, ticksShed: $0.ticksShed, encoderPresetChanges: $0.encoderPresetChanges)
        }
        captions = CaptionReport(kept: s.captions.kept, bytesIn: s.captions.bytesIn, bytesOut: s.captions.bytesOut,
                                 tripletsDropped: s.captions.tripletsDropped)
        splices = SpliceReport(placed: s.splices, unplaced: s.splicesUnplaced)
        ticks = s.ticks.map {
            Ticks(ticks: $0.ticks, lateTicks: $0.lateTicks, latencySkips: $0.latencySkips,
                  caughtUpAfter: $0.caughtUpAfter?.secondsValue.rounded(to: 3),
                  maximumLatency: $0.maximumLatency.secondsValue, latenessP50: $0.latenessP50.secondsValue,
                  latenessP95: $0.latenessP95.secondsValue, latenessMax: $0.latenessMax.secondsValue)
        }
    }

    /// The report as JSON text (pretty, sorted keys, snake_case).
    func json() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return Array(try encoder.encode(self))
    }
}

extension Duration {
    var secondsValue: Double {
        let c = components
        return (Double(c.seconds) + Double(c.attoseconds) / 1e18).rounded(to: 4)
    }
}
