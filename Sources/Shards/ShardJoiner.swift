import Foundation
import Logging
import HLS
import MediaIO
import Pipeline

/// What a join made.
public struct JoinSummary: Sendable {
    public var output: String
    /// Every file published (playlists, segments, frames, or the one container file).
    public var files: Int
    public var frames: Int
    public var bytes: Int64
    public var seconds: Double
    /// Sum of the tasks' CPU seconds, and their pre-roll frames (decoded twice).
    public var taskCPUSeconds: Double
    public var prerollFrames: Int
}

/// Joins the parts of a plan into the output a single run writes: checks every part first (naming
/// what is missing and its log), holds a lock so two joins cannot interleave, and publishes the
/// output atomically — container files by stream copy of the video parts and the audio part
/// (faststart, continuous timestamps), HLS by moving the segments and writing the playlists,
/// PNG frames by moving them.
public enum ShardJoiner {
    public static func join(plan: ShardPlan, keepParts: Bool = false) throws(ShardError) -> JoinSummary {
        let start = Date()
        let lock = try JoinLock(path: plan.workDirectory + "/join.lock")
        defer { lock.release() }
        let parts = try manifests(plan)
        do { _ = try OutputFolder.make(of: plan.output) } catch { throw .media(error) }
        var summary = JoinSummary(output: plan.output, files: 0, frames: parts.video.reduce(0) { $0 + $1.frames }, bytes: 0,
                                  seconds: 0, taskCPUSeconds: (parts.video + (parts.audio.map { [$0] } ?? [])).reduce(0) { $0 + $1.cpuSeconds },
                                  prerollFrames: parts.video.reduce(0) { $0 + $1.prerollFrames })
        switch plan.outputContainer {
        case .hls: try joinHLS(plan, parts, &summary)
        case .pngSequence: try joinFrames(plan, parts, &summary)
        case .mp4, .mov, .mkv, .ts: try joinContainer(plan, parts, &summary)
        case .null: throw .cannotSplit("-o null writes nothing to join")
        }
        if !keepParts {
            for k in plan.shards.indices { try? FileManager.default.removeItem(atPath: plan.partDirectory(k)) }
            try? FileManager.default.removeItem(atPath: plan.partDirectory(nil))
            try? FileManager.default.removeItem(atPath: plan.workDirectory + "/progress")
        }
        summary.seconds = Date().timeIntervalSince(start)
        Logger(label: "livefilter.shards").info("joined", metadata: [
            "output": "\(plan.output)", "shards": "\(plan.shards.count)", "files": "\(summary.files)", "bytes": "\(summary.bytes)"])
        return summary
    }

    /// Every part's manifest, or an error naming each one missing and its log.
    static func manifests(_ plan: ShardPlan) throws(ShardError) -> (video: [PartManifest], audio: PartManifest?) {
        var video: [PartManifest] = []
        var missing: [(shard: Int?, log: String)] = []
        for k in plan.shards.indices {
            if let m = PartManifest.read(plan.manifestPath(k)), m.plan == plan.id, m.shard == k { video.append(m) } else {
                missing.append((k, plan.logPath(k)))
            }
        }
        var audio: PartManifest?
        if plan.audio {
            audio = PartManifest.read(plan.manifestPath(nil))
            if audio?.plan != plan.id { audio = nil; missing.append((nil, plan.logPath(nil))) }
        }
        if !missing.isEmpty { throw .partsMissing(missing, workDirectory: plan.workDirectory) }
        for (k, m) in video.enumerated() {
            for file in m.files where !FileManager.default.fileExists(atPath: plan.partDirectory(k) + "/" + file) {
                throw .partsInconsistent("shard \(k)'s part lists \(file), which is not in \(plan.partDirectory(k))")
            }
        }
        return (video, audio)
    }

    // MARK: Container files

    static func joinContainer(_ plan: ShardPlan, _ parts: (video: [PartManifest], audio: PartManifest?), _ summary: inout JoinSummary) throws(ShardError) {
        let container = plan.outputContainer
        do throws(MediaError) {
            let readers = try plan.shards.indices.map { k throws(MediaError) in try PartReader(path: plan.partDirectory(k) + "/video.mp4") }
            let audio = try parts.audio.map { _ throws(MediaError) in try PartReader(path: plan.partDirectory(nil) + "/audio.mp4") }
            guard let videoIndex = readers.first?.videoStream else {
                throw MediaError.notMediaFile(plan.partDirectory(0) + "/video.mp4", reason: "no video stream in the part")
            }
            let muxer = try Muxer(path: plan.output, container: container,
                                  options: ContainerOptions(faststart: container == .mp4 || container == .mov), overwrite: plan.overwrite)
            let videoOut = try muxer.addStream(copying: videoIndex, of: readers[0])
            let audioIndex = audio?.audioStream
            let audioOut = try audio.flatMap { a throws(MediaError) in try audioIndex.map { i throws(MediaError) in try muxer.addStream(copying: i, of: a) } }
            try muxer.begin()
            // Audio goes in between the video packets by decode time, as the interleaver wants it.
            let audioPacket = Packet()
            var audioPending = false
            func audioTime() -> Double {
                Double(audioPacket.decodeTimestamp ?? 0) * audio!.timeBase(audioIndex!).doubleValue
            }
            func nextAudio() throws(MediaError) {
                audioPending = false
                guard let audio, let audioIndex else { return }
                while try audio.read(into: audioPacket) {
                    if audioPacket.streamIndex == audioIndex { audioPending = true; return }
                }
            }
            try nextAudio()
            let packet = Packet()
            var lastDts = Int64.min
            for (k, reader) in readers.enumerated() {
                guard let v = reader.videoStream else { throw MediaError.notMediaFile(reader.path, reason: "no video stream in the part") }
                let tb = reader.timeBase(v)
                var frames = 0
                while try reader.read(into: packet) {
                    guard packet.streamIndex == v else { continue }
                    let dts = packet.decodeTimestamp ?? 0
                    // Parts in order: a decode time going back means a part from elsewhere.
                    let global = Int64((Double(dts) * tb.doubleValue * 1e6).rounded())
                    guard global > lastDts else {
                        throw MediaError.invalidSettings("shard \(k)'s part overlaps the one before it (decode time \(Double(global) / 1e6) s)")
                    }
                    lastDts = global
                    let t = Double(dts) * tb.doubleValue
                    while audioPending, audioOut != nil, audioTime() <= t {
                        try muxer.write(audioPacket, toStream: audioOut!, timeBase: audio!.timeBase(audioIndex!))
                        try nextAudio()
                    }
                    try muxer.write(packet, toStream: videoOut, timeBase: tb)
                    frames += 1
                }
                if frames != parts.video[k].frames {
                    throw MediaError.invalidSettings("shard \(k)'s part has \(frames) frames, its manifest \(parts.video[k].frames)")
                }
            }
            while audioPending, let audioOut {
                try muxer.write(audioPacket, toStream: audioOut, timeBase: audio!.timeBase(audioIndex!))
                try nextAudio()
            }
            try muxer.commit()
            summary.files = 1
            summary.bytes = muxer.bytesWritten
        } catch {
            if case .invalidSettings(let reason) = error { throw .partsInconsistent(reason) }
            throw .media(error)
        }
    }

    // MARK: PNG frames

    static func joinFrames(_ plan: ShardPlan, _ parts: (video: [PartManifest], audio: PartManifest?), _ summary: inout JoinSummary) throws(ShardError) {
        let folder = URL(fileURLWithPath: plan.output).deletingLastPathComponent().path
        var moves: [(String, String)] = []
        for (k, part) in parts.video.enumerated() {
            for file in part.files where file.hasSuffix(".png") {
                moves.append((plan.partDirectory(k) + "/" + file, folder + "/" + file))
            }
        }
        try publish(moves, overwrite: plan.overwrite)
        summary.files = moves.count
        summary.bytes = parts.video.reduce(0) { $0 + $1.bytes }
    }

    // MARK: HLS

    static func joinHLS(_ plan: ShardPlan, _ parts: (video: [PartManifest], audio: PartManifest?), _ summary: inout JoinSummary) throws(ShardError) {
        guard let layout = plan.hls else { throw .partsInconsistent("the plan has no HLS layout") }
        let folder = URL(fileURLWithPath: plan.output).deletingLastPathComponent().path
        var moves: [(String, String)] = []
        var playlists: [(name: String, playlist: MediaPlaylist, segments: [PartManifest.Segment], facts: PartManifest.PartPlaylist)] = []

        func gather(_ name: String, from tasks: [(dir: String, manifest: PartManifest)]) throws(ShardError) {
            var segments: [PartManifest.Segment] = []
            var map: String?
            var facts: PartManifest.PartPlaylist?
            for (dir, manifest) in tasks {
                guard let p = manifest.playlists.first(where: { $0.name == name }) else {
                    throw .partsInconsistent("\(dir) has no playlist \(name)")
                }
                facts = facts ?? p
                if let m = p.map, map == nil {
                    map = m
                    moves.append((dir + "/" + m, folder + "/" + m))
                }
                for s in p.segments {
                    if segments.contains(where: { $0.uri == s.uri }) { throw .partsInconsistent("segment \(s.uri) is in two parts") }
                    segments.append(s)
                    moves.append((dir + "/" + s.uri, folder + "/" + s.uri))
                }
            }
            let media = MediaPlaylist(targetDuration: max(layout.targetDuration, segments.map { Int($0.duration.rounded()) }.max() ?? 0),
                                      mediaSequence: 0, playlistType: .vod, independentSegments: true,
                                      map: map.map { MediaInitializationSection(uri: $0) },
                                      segments: segments.map { MediaSegment(duration: $0.duration, uri: $0.uri) }, endList: true)
            playlists.append((name, media, segments, facts!))
        }
        let videoTasks = parts.video.enumerated().map { (plan.partDirectory($0.offset), $0.element) }
        for name in layout.video { try gather(name, from: videoTasks) }
        if let audioName = layout.audio, let audio = parts.audio { try gather(audioName, from: [(plan.partDirectory(nil), audio)]) }

        // Nothing existing is replaced unless the plan says so; checked before anything moves.
        for p in playlists { try check(folder + "/" + p.name, overwrite: plan.overwrite) }
        if let master = layout.master { try check(folder + "/" + master, overwrite: plan.overwrite) }
        try publish(moves, overwrite: plan.overwrite)
        do throws(MediaError) {
            for p in playlists {
                try AtomicFile.write(Array(p.playlist.render(durationDecimals: 3).utf8), to: folder + "/" + p.name, displayPath: p.name)
            }
            if let master = layout.master {
                let text = masterPlaylist(layout, playlists.map { ($0.name, $0.segments, $0.facts) })
                try AtomicFile.write(Array(text.utf8), to: folder + "/" + master, displayPath: master)
            }
        } catch {
            throw .media(error)
        }
        summary.files = moves.count + playlists.count + (layout.master == nil ? 0 : 1)
        summary.bytes = playlists.reduce(0) { $0 + $1.segments.reduce(0) { $0 + Int64($1.bytes) } }
    }

    /// The master: the audio rendition (EXT-X-MEDIA) and each video playlist with BANDWIDTH the peak
    /// of its segments' bit rate plus the audio's over the same segment, measured over the real
    /// segments, and AVERAGE-BANDWIDTH over the whole.
    static func masterPlaylist(_ layout: ShardPlan.HLSLayout, _ lists: [(name: String, segments: [PartManifest.Segment], facts: PartManifest.PartPlaylist)]) -> String {
        let audio = layout.audio.flatMap { name in lists.first { $0.name == name } }
        var media: [AlternativeRendition] = []
        if let audio {
            media.append(AlternativeRendition(groupID: "audio", name: "audio", channels: layout.audioChannels, uri: audio.name))
        }
        let variants = lists.filter { $0.name != layout.audio }.map { list in
            var peak = 0.0
            var bits = 0.0
            var seconds = 0.0
            for (i, s) in list.segments.enumerated() {
                let audioBytes = audio.map { i < $0.segments.count ? Double($0.segments[i].bytes) : 0 } ?? 0
                let segmentBits = (Double(s.bytes) + audioBytes) * 8
                bits += segmentBits
                seconds += s.duration
                // A last segment shorter than half the target is noise, as the writer measures it.
                let isShortLast = i == list.segments.count - 1 && list.segments.count > 1 && s.duration < Double(layout.targetDuration) / 2
                if s.duration > 0, !isShortLast { peak = max(peak, segmentBits / s.duration) }
            }
            if let audio, audio.segments.count > list.segments.count {
                bits += audio.segments.dropFirst(list.segments.count).reduce(0) { $0 + Double($1.bytes) * 8 }
            }
            let average = seconds > 0 ? bits / seconds : 0
            let codecs = [list.facts.codecs, audio?.facts.codecs ?? ""].filter { !$0.isEmpty }.joined(separator: ",")
            return VariantStream(bandwidth: Int(max(peak, average).rounded(.up)), averageBandwidth: Int(average.rounded(.up)),
                                 resolution: list.facts.width.flatMap { w in list.facts.height.map { Resolution(width: w, height: $0) } },
                                 frameRate: list.facts.frameRate, codecs: codecs.isEmpty ? nil : codecs,
                                 audioGroup: audio == nil ? nil : "audio", uri: list.name)
        }
        return MasterPlaylist(version: 1, independentSegments: true, media: media, variants: variants).render()
    }

    // MARK: Files

    static func check(_ path: String, overwrite: Bool) throws(ShardError) {
        do { try AtomicFile.checkDestination(path, overwrite: overwrite) } catch { throw .media(error) }
    }

    /// Moves finished files into place: every destination is checked first, then each file is
    /// renamed (copied and renamed across file systems), so a name appears complete or not at all.
    static func publish(_ moves: [(String, String)], overwrite: Bool) throws(ShardError) {
        for (_, to) in moves { try check(to, overwrite: overwrite) }
        for (from, to) in moves {
            if rename(from, to) == 0 { continue }
            guard errno == EXDEV else {
                throw .media(.outputNotWritable(to, reason: String(cString: strerror(errno))))
            }
            let temporary = to + ".livefilter-join-\(getpid()).tmp"
            do {
                try? FileManager.default.removeItem(atPath: temporary)
                try FileManager.default.copyItem(atPath: from, toPath: temporary)
            } catch {
                throw .media(.outputNotWritable(to, reason: error.localizedDescription))
            }
            guard rename(temporary, to) == 0 else { throw .media(.outputNotWritable(to, reason: String(cString: strerror(errno)))) }
        }
    }
}

/// One join at a time per plan: a lock file made with O_EXCL, naming its holder. A lock left by a
/// join that died on this host is taken over; one held elsewhere is reported.
final class JoinLock {
    let path: String
    private var held = false

    init(path: String) throws(ShardError) {
        self.path = path
        let host = ProcessInfo.processInfo.hostName
        for _ in 0..<2 {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
            if fd >= 0 {
                let text = "\(getpid()) \(host)\n"
                _ = text.withCString { write(fd, $0, strlen($0)) }
                close(fd)
                held = true
                return
            }
            guard errno == EEXIST else {
                throw .media(.outputNotWritable(path, reason: String(cString: strerror(errno))))
            }
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            let fields = holder.split(separator: " ")
            if fields.count == 2, String(fields[1]) == host, let pid = Int32(fields[0]), kill(pid, 0) != 0, errno == ESRCH {
                unlink(path)
                continue
            }
            throw .joinInProgress(path, holder: holder.isEmpty ? "unknown" : "pid \(fields.first ?? "") on \(fields.last ?? "")")
        }
        throw .joinInProgress(path, holder: "unknown")
    }

    func release() {
        if held { unlink(path) }
        held = false
    }
}
