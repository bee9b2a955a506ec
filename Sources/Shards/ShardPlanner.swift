import Foundation
import MediaIO
import Pipeline

/// How many shards: a count, or a duration each.
public enum ShardCount: Sendable, Equatable {
    case count(Int)
    case duration(Double)
}

/// Makes a `ShardPlan`: reads the input's packet index once (no decoding but the first frame),
/// lays the whole job's output timeline down as a single run would, and cuts it into ranges that
/// start where a shard can start exactly: on an output segment boundary (HLS) or where an input
/// keyframe first shows (files), each range reading from the keyframe that lets the newest-frame
/// rule pick, at every tick, the frame a single run picks.
public enum ShardPlanner {
    /// - Parameters:
    ///   - configuration: the job, as `run` would run it on one machine.
    ///   - arguments: the run options as typed (stored in the plan; every task parses them again).
    ///   - workDirectory: where parts go; default `OUTPUT.parts` next to the output.
    ///   - warmup: seconds of pictures before each cut that the shard's encoder also encodes (and drops),
    ///     so its rate control reaches the cut in the state a single run's does. 4 s made the test
    ///     clips bit-identical to the single run; 2 s left them at ≥ 48 dB.
    ///   - interrupt: its `stop()`, from any thread, ends the planning wherever it reads (the open,
    ///     the packet scan, the first frame); made by the caller before it starts.
    public static func plan(configuration: JobConfiguration, arguments: [String], shards: ShardCount,
                            workDirectory: String? = nil, warmup: Double = 4,
                            interrupt: InputInterrupt = InputInterrupt()) throws(ShardError) -> ShardPlan {
        let job: TranscodeJob
        do { job = try TranscodeJob(configuration: configuration, interrupt: interrupt) } catch { throw .job(error) }
        let plan = job.plan
        let demuxer = job.demuxer
        if plan.input.isLive {
            throw .cannotSplit("'\(configuration.input)' is a live stream: live streams scale by running one process per stream")
        }
        switch plan.container {
        case .null: throw .cannotSplit("-o null writes nothing to join")
        default: break
        }
        if configuration.maxDuration != nil { throw .cannotSplit("--max-duration: split the whole input, or cut it first") }
        if configuration.realtime { throw .cannotSplit("--realtime paces one run on the wall clock") }
        if plan.hlsOptions.map({ $0.playlistType != .vod }) ?? false {
            throw .cannotSplit("a sharded HLS output is VOD (--hls-playlist vod): event and live playlists grow during one run")
        }

        let video = demuxer.video
        let timeBase = video.timeBase
        let containerStart = demuxer.start(inTimeBase: timeBase)
        let packets: [VideoPacketFacts]
        do { packets = try demuxer.scanVideoPackets() } catch { throw .media(error) }
        guard !packets.isEmpty else { throw .media(.noVideoFrames(configuration.input)) }
        var identity = try Self.identity(of: configuration, packets: packets, duration: demuxer.duration,
                                         containerIndex: demuxer.indexFingerprint)

        // Presentation times relative to the container's start, as the decode stage gives them.
        let frameTimes = packets.compactMap(\.pts).map { $0 - containerStart }.sorted()
        guard let firstTime = try firstFrameTime(configuration, containerStart: containerStart, rate: plan.timing.rate,
                                                 interrupt: interrupt) else {
            throw .media(.noVideoFrames(configuration.input))
        }
        let keyframes = packets.filter { $0.isKeyframe && $0.pts != nil }
            .map { (time: $0.pts! - containerStart, seek: $0.pts!) }
            .sorted { $0.time < $1.time }
        let typicalDuration = frameTimes.count > 1
            ? max(1, (frameTimes.last! - frameTimes.first!) / Int64(frameTimes.count - 1)) : 1
        let lastEnd = (frameTimes.last ?? firstTime) + typicalDuration

        let wanted: Int
        switch shards {
        case let .count(n): wanted = n
        case let .duration(seconds):
            let total = demuxer.duration ?? Double(lastEnd - firstTime) * timeBase.doubleValue
            wanted = max(1, Int((total / seconds).rounded(.up)))
        }
        guard wanted >= 1, wanted <= 10_000 else { throw .cannotSplit("--shards must be between 1 and 10000, got \(wanted)") }

        let rate = plan.timing.rate
        let schedule = plan.segmentSchedule
        func tickTime(_ k: Int64) -> MediaTime { MediaTime(value: k, numerator: Int64(rate.denominator), denominator: Int64(rate.numerator)) }
        func inputTime(_ t: Int64) -> MediaTime {
            MediaTime(value: t - firstTime, numerator: Int64(timeBase.numerator), denominator: Int64(timeBase.denominator))
        }
        /// The first tick that shows input time `t` or later: ceil((t − origin) · rate).
        func firstTick(showing t: Int64) -> Int64 {
            let num = (t - firstTime) * Int64(timeBase.numerator) * Int64(rate.numerator)
            let den = Int64(timeBase.denominator) * Int64(rate.denominator)
            return num <= 0 ? 0 : (num + den - 1) / den
        }

        var ranges: [ShardPlan.Shard] = []
        let mode: ShardPlan.Timing.Mode
        let total: Int64
        switch plan.timing {
        case .ticks:
            mode = .ticks
            total = max(1, firstTick(showing: lastEnd))
            var starts: [Int64] = []
            if let schedule {
                // HLS: every shard starts a segment, so segments are whole and numbered as one run numbers them.
                let segments = schedule.segment(ofTick: total - 1) + 1
                for i in 1..<wanted {
                    let j = Int64((Double(i) * Double(segments) / Double(wanted)).rounded())
                    starts.append(schedule.firstTick(ofSegment: j))
                }
            } else {
                // Files: where an input keyframe first shows, near the ideal cut (no pre-roll there).
                let keyTicks = keyframes.map { firstTick(showing: $0.time) }
                for i in 1..<wanted {
                    let ideal = Int64((Double(i) * Double(total) / Double(wanted)).rounded())
                    // The single run has a keyframe there too (`keyframesAtSource`), so GOPs line up.
                    starts.append(keyTicks.min { abs($0 - ideal) < abs($1 - ideal) } ?? ideal)
                }
            }
            let cuts = [0] + Array(Set(starts.filter { $0 > 0 && $0 < total })).sorted()
            // The encoder warms up on the pictures before a cut (`warmup` seconds, or a segment if
            // longer), so its rate control arrives at the cut as a single run's does, and cools down
            // on two seconds after it, so its look-ahead sees what a single run's sees.
            let warmupTicks = max(Int64((warmup * rate.doubleValue).rounded(.up)), schedule?.firstTick(ofSegment: 1) ?? 0)
            let cooldownTicks = max(Int64((2 * rate.doubleValue).rounded(.up)), schedule?.firstTick(ofSegment: 1) ?? 0)
            for (i, start) in cuts.enumerated() {
                let end = i + 1 < cuts.count ? cuts[i + 1] : nil
                let encodeFrom = start == 0 ? nil : Optional(max(0, start - warmupTicks))
                let first = encodeFrom ?? start
                // The newest keyframe at or before the first encoded tick's time: its GOP holds that tick's frame.
                let seek = first == 0 ? nil : keyframes.last { !(tickTime(first) < inputTime($0.time)) }
                let decodedFirst = seek.map { kf in frameTimes.filter { $0 >= kf.time && !(tickTime(first) < inputTime($0)) }.count - 1 } ?? 0
                ranges.append(ShardPlan.Shard(index: i, start: start, end: end, encodeFrom: encodeFrom,
                                              encodeUntil: end.map { min(total, $0 + cooldownTicks) }, seekKeyframe: seek?.seek,
                                              firstSegment: Int(schedule?.segment(ofTick: start) ?? 0),
                                              firstImageNumber: Int(start) + 1, frames: (end ?? total) - start,
                                              prerollFrames: max(0, decodedFirst) + Int(start - first)
                                                  + Int(end.map { min(total, $0 + cooldownTicks) - $0 } ?? 0)))
            }
        case .sourceTimestamps:
            // Timestamps kept: shards are runs of input frames, each from a keyframe (no pre-roll).
            mode = .timestamps
            total = Int64(frameTimes.count)
            var starts: [(time: Int64, seek: Int64)] = []
            for i in 1..<max(1, wanted) {
                let ideal = frameTimes[min(frameTimes.count - 1, i * frameTimes.count / wanted)]
                if let near = keyframes.min(by: { abs($0.time - ideal) < abs($1.time - ideal) }), near.time > firstTime {
                    starts.append(near)
                }
            }
            var seen = Set<Int64>()
            starts = starts.filter { seen.insert($0.time).inserted }.sorted { $0.time < $1.time }
            let cuts: [(time: Int64, seek: Int64?)] = [(firstTime, nil)] + starts.map { ($0.time, Optional($0.seek)) }
            // Warm-up: encoding starts at the newest keyframe `warmup` seconds or more before the cut.
            let twoSeconds = Int64((2 / timeBase.doubleValue).rounded())
            let warmupUnits = Int64((warmup / timeBase.doubleValue).rounded())
            for (i, cut) in cuts.enumerated() {
                let end = i + 1 < cuts.count ? cuts[i + 1].time : nil
                let before = frameTimes.prefix { $0 < cut.time }.count
                let upTo = end.map { e in frameTimes.prefix { $0 < e }.count } ?? frameTimes.count
                let warm = i == 0 ? nil : keyframes.last { $0.time <= cut.time - warmupUnits } ?? keyframes.first
                let warmFrames = (warm.map { w in frameTimes.filter { $0 >= w.time && $0 < cut.time }.count } ?? 0)
                    + (end.map { e in frameTimes.filter { $0 >= e && $0 < e + twoSeconds }.count } ?? 0)
                ranges.append(ShardPlan.Shard(index: i, start: i == 0 ? .min / 2 : cut.time, end: end,
                                              encodeFrom: warm.map(\.time), encodeUntil: end.map { $0 + twoSeconds },
                                              seekKeyframe: warm?.seek ?? cut.seek,
                                              firstSegment: 0, firstImageNumber: before + 1, frames: Int64(upTo - before),
                                              prerollFrames: warmFrames))
            }
        }

        let output = URL(fileURLWithPath: configuration.output).standardizedFileURL.path
        if let path = localPath(configuration.input) { identity.url = URL(fileURLWithPath: path).standardizedFileURL.path }
        return ShardPlan(
            format: ShardPlan.currentFormat,
            id: String(UInt64.random(in: 0...UInt64.max), radix: 16),
            created: Date(),
            input: identity,
            output: output,
            container: plan.container.rawValue,
            overwrite: configuration.overwrite,
            arguments: arguments,
            directory: FileManager.default.currentDirectoryPath,
            workDirectory: workDirectory.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
                ?? ShardPlan.defaultWorkDirectory(forOutput: output),
            timing: ShardPlan.Timing(mode: mode, rate: "\(rate.numerator)/\(rate.denominator)",
                                     timeBase: "\(timeBase.numerator)/\(timeBase.denominator)", origin: firstTime, total: total),
            segmentDuration: plan.hlsOptions?.segmentDuration,
            hls: hlsLayout(plan, output: output),
            audio: plan.audio != .none,
            requested: wanted,
            shards: ranges)
    }

    /// Final playlist names: the renditions' own; with audio, a master at the output and the one
    /// video playlist beside it as `NAME_video.m3u8`, the audio as `NAME_audio.m3u8`.
    static func hlsLayout(_ plan: JobPlan, output: String) -> ShardPlan.HLSLayout? {
        guard let options = plan.hlsOptions else { return nil }
        let name = URL(fileURLWithPath: output).lastPathComponent
        let stem = (name as NSString).deletingPathExtension
        let ladder = plan.renditions.count > 1 || plan.isLadder
        let audio = plan.audio != .none
        var video = plan.renditions.map { URL(fileURLWithPath: $0.playlistPath ?? output).lastPathComponent }
        if !ladder, audio { video = ["\(stem)_video.m3u8"] }
        return ShardPlan.HLSLayout(master: ladder || audio ? name : nil, ladder: ladder, video: video, audio: audio ? "\(stem)_audio.m3u8" : nil,
                                   targetDuration: options.targetDuration, audioChannels: plan.audioChannels)
    }

    /// The first decoded frame's time, relative to the container's start, as the decode stage
    /// computes it: output tick 0 of the whole job.
    static func firstFrameTime(_ configuration: JobConfiguration, containerStart: Int64, rate: Rational,
                               interrupt: InputInterrupt = InputInterrupt()) throws(ShardError) -> Int64? {
        do throws(MediaError) {
            let demuxer = try Demuxer(url: configuration.input, options: configuration.inputOptions, interrupt: interrupt)
            let decoder = try Decoder(demuxer: demuxer, streamIndex: demuxer.video.index)
            let packet = Packet()
            let nominal = max(1, Int64((1 / rate.doubleValue / demuxer.video.timeBase.doubleValue).rounded()))
            func first() throws(MediaError) -> Int64? {
                do {
                    if case let .frame(frame) = try decoder.receive() {
                        return (frame.timestamp ?? containerStart + nominal) - containerStart
                    }
                } catch { throw .processing(error) }
                return nil
            }
            while true {
                let result: Demuxer.ReadResult
                do { result = try demuxer.read(into: packet) } catch { throw .processing(error) }
                guard case .packet = result else { break }
                guard packet.streamIndex == demuxer.video.index else { continue }
                do { try decoder.send(packet) } catch { throw .processing(error) }
                if let t = try first() { return t }
            }
            decoder.sendEndOfStream()
            return try first()
        } catch {
            throw .media(error)
        }
    }

    /// The input's identity: for a local file its size and time, and hashes of its index.
    static func identity(of configuration: JobConfiguration, packets: [VideoPacketFacts], duration: Double?,
                         containerIndex: [UInt8]) throws(ShardError) -> InputIdentity {
        var index = FNV1a()
        for p in packets {
            index.add(p.pts ?? .min)
            index.add(p.dts ?? .min)
            index.add(Int64(p.size))
            index.add(p.isKeyframe ? 1 : 0)
        }
        let quick = quickHash(configuration, containerIndex: containerIndex)
        let file = localPath(configuration.input)
        let attributes = file.flatMap { try? FileManager.default.attributesOfItem(atPath: $0) }
        return InputIdentity(url: configuration.input,
                             bytes: (attributes?[.size] as? NSNumber)?.int64Value,
                             modified: (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970,
                             quickHash: quick, indexHash: index.hex, videoPackets: packets.count, duration: duration)
    }

    /// The container's index and, for a local file, its first and last 64 KiB and size.
    static func quickHash(_ configuration: JobConfiguration, containerIndex: [UInt8]) -> String {
        var hash = FNV1a()
        hash.add(bytes: containerIndex)
        if let path = localPath(configuration.input), let handle = FileHandle(forReadingAtPath: path) {
            defer { try? handle.close() }
            let size = (try? handle.seekToEnd()) ?? 0
            hash.add(Int64(size))
            try? handle.seek(toOffset: 0)
            hash.add(bytes: (try? handle.read(upToCount: 65536)) ?? Data())
            try? handle.seek(toOffset: size > 65536 ? size - 65536 : 0)
            hash.add(bytes: (try? handle.read(upToCount: 65536)) ?? Data())
        }
        return hash.hex
    }

    static func localPath(_ input: String) -> String? {
        if input.hasPrefix("file:") { return String(input.dropFirst(5)) }
        return input.contains("://") ? nil : input
    }
}
