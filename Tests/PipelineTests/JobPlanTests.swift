import Filters
import MediaIO
import Pipeline
import Testing

/// The plan, without media: every decision is a pure function of stream facts and configuration.
struct JobPlanTests {
    static func facts(size: FrameSize = FrameSize(width: 1280, height: 720), pixelFormat: PixelFormat = .yuv420p,
                      fullRange: Bool = false, matrix: DisplayMatrix? = nil, audio: Bool = true, live: Bool = false) -> InputFacts {
        var color = ColorDescription.bt709
        color.range = fullRange ? .full : .limited
        let video = VideoStreamInfo(size: size, pixelFormat: pixelFormat, frameRate: Rational(30, 1),
                                    displayMatrix: matrix, colorSpace: color)
        return InputFacts(url: "in.mp4", video: video, audio: nil, isLive: live, duration: 10)
    }

    static func plan(_ chain: String, output: String = "out.mp4", facts: InputFacts = facts(),
                     configure: (inout JobConfiguration) -> Void = { _ in }) throws -> JobPlan {
        var config = JobConfiguration(input: "in.mp4", output: output, chain: try FilterChain(parsing: chain))
        configure(&config)
        return try JobPlan(configuration: config, input: facts)
    }

    // MARK: Video path

    struct PathCase: CustomTestStringConvertible, Sendable {
        var chain: String
        var output = "out.mp4"
        var pixelFormat = PixelFormat.yuv420p
        var fullRange = false
        var renditions: [String] = []
        var exactRGB = false
        var expected: String
        var testDescription: String { "\(chain.isEmpty ? "(empty)" : chain) → \(output) \(pixelFormat) \(renditions) = \(expected)" }
    }

    @Test(arguments: [
        PathCase(chain: "", expected: "passthrough"),
        PathCase(chain: "mirror", expected: "planar"),
        PathCase(chain: "rotate 90 | mirror vertical", expected: "planar"),
        PathCase(chain: "rotate 180", expected: "planar"),
        // Linear filters on even geometry run on the planes too (PlanarChainTests: same picture).
        PathCase(chain: "blur 2", expected: "planar"),
        PathCase(chain: "mirror | blur 2", expected: "planar"),
        PathCase(chain: "scale 640x360", expected: "planar"),
        PathCase(chain: "blur sigma=6 | rotate 90 | mirror | scale fit=720x1280", expected: "planar"),
        PathCase(chain: "crop 640x360+10+20 | scale 320x180", expected: "planar"),
        PathCase(chain: "blur 2", exactRGB: true, expected: "rgb"),
        PathCase(chain: "mirror", exactRGB: true, expected: "rgb"),
        PathCase(chain: "crop 640x360+11+20", expected: "rgb"),
        PathCase(chain: "scale 641x360", expected: "rgb"),
        PathCase(chain: "rotate 12", expected: "rgb"),
        PathCase(chain: "blur 2 | rotate 12", expected: "rgb"),
        PathCase(chain: "", output: "f/%04d.png", expected: "rgb"),
        PathCase(chain: "mirror", output: "f/%04d.png", expected: "rgb"),
        PathCase(chain: "", pixelFormat: .yuv422p, expected: "rgb"),
        // Full-range 4:2:0 runs on the planes too, written as limited range by a first pass, so
        // even an empty chain is not a passthrough (PlanarChainTests: same picture).
        PathCase(chain: "mirror", pixelFormat: .yuvj420p, expected: "planar"),
        PathCase(chain: "", pixelFormat: .yuvj420p, expected: "planar"),
        PathCase(chain: "mirror", fullRange: true, expected: "planar"),
        PathCase(chain: "", fullRange: true, expected: "planar"),
        PathCase(chain: "rotate 12", pixelFormat: .yuvj420p, expected: "rgb"),
        PathCase(chain: "mirror", pixelFormat: .yuvj420p, exactRGB: true, expected: "rgb"),
        PathCase(chain: "", pixelFormat: .yuvj422p, expected: "rgb"),
        PathCase(chain: "", output: "hls/index.m3u8", expected: "passthrough"),
        // A ladder scales each rung from the chain's picture: on the planes when the chain runs there.
        PathCase(chain: "", output: "hls/master.m3u8", renditions: ["640x360", "320x180"], expected: "planar"),
        // A rung so small that the plane scaler's 16-bit weights lose the kernel's shape: RGB.
        PathCase(chain: "", output: "hls/master.m3u8", renditions: ["640x360", "48x26"], expected: "rgb"),
        PathCase(chain: "scale 32x18", expected: "rgb"),
        PathCase(chain: "blur 2 | mirror", output: "hls/master.m3u8", renditions: ["1280x720", "640x360", "426x240"], expected: "planar"),
        PathCase(chain: "rotate 12", output: "hls/master.m3u8", renditions: ["640x360", "320x180"], expected: "rgb"),
        PathCase(chain: "", output: "hls/master.m3u8", renditions: ["640x360", "320x180"], exactRGB: true, expected: "rgb"),
        PathCase(chain: "", output: "hls/master.m3u8", renditions: ["1280x720"], expected: "passthrough"),
    ])
    func videoPath(_ c: PathCase) throws {
        let facts = Self.facts(pixelFormat: c.pixelFormat, fullRange: c.fullRange)
        let plan = try Self.plan(c.chain, output: c.output, facts: facts) { config in
            config.renditions = c.renditions.compactMap { Rendition(parsing: $0) }
            config.exactRGB = c.exactRGB
        }
        let name = switch plan.videoPath {
        case .passthrough: "passthrough"
        case .planar: "planar"
        case .rgbChain: "rgb"
        }
        #expect(name == c.expected)
    }

    @Test func oddSizesAreRoundedDownToEvenExceptForPNG() throws {
        let facts = Self.facts(size: FrameSize(width: 641, height: 361))
        let mp4 = try Self.plan("", facts: facts)
        #expect(mp4.geometry.encodeSize == FrameSize(width: 640, height: 360))
        #expect(mp4.geometry.roundedFrom == FrameSize(width: 641, height: 361))
        if case .passthrough = mp4.videoPath { Issue.record("an odd picture cannot pass through to an even encoder") }
        let png = try Self.plan("", output: "f/%04d.png", facts: facts)
        #expect(png.geometry.encodeSize == FrameSize(width: 641, height: 361))
    }

    // MARK: Orientation

    struct OrientationCase: CustomTestStringConvertible, Sendable {
        var degrees: Double
        var mirrored: Bool
        /// The filters ffmpeg 5.1's autorotate inserts for this matrix, in our names.
        var expected: String
        /// nil for a non-quarter angle: the bilinear rotation's own expanded canvas.
        var size: FrameSize?
        var testDescription: String { "\(degrees)° \(mirrored ? "mirrored" : "") → \(expected)" }
    }

    // ffmpeg_filter.c (5.1): theta = round(angle) folded into [-0.9, 359.1); 90 → transpose clock
    // (cclock_flip when matrix[3] > 0); 180 → hflip if matrix[0] < 0, vflip if matrix[4] < 0;
    // 270 → transpose cclock (clock_flip when matrix[3] < 0); 0 → vflip if matrix[4] < 0;
    // other angles → rotate by theta.
    @Test(arguments: [
        OrientationCase(degrees: 0, mirrored: false, expected: "none", size: FrameSize(width: 1280, height: 720)),
        OrientationCase(degrees: 90, mirrored: false, expected: "rotate 90", size: FrameSize(width: 720, height: 1280)),
        OrientationCase(degrees: -90, mirrored: false, expected: "rotate 270", size: FrameSize(width: 720, height: 1280)),
        OrientationCase(degrees: 270, mirrored: false, expected: "rotate 270", size: FrameSize(width: 720, height: 1280)),
        OrientationCase(degrees: 180, mirrored: false, expected: "rotate 180", size: FrameSize(width: 1280, height: 720)),
        OrientationCase(degrees: -180, mirrored: false, expected: "rotate 180", size: FrameSize(width: 1280, height: 720)),
        OrientationCase(degrees: 90.4, mirrored: false, expected: "rotate 90", size: FrameSize(width: 720, height: 1280)),
        OrientationCase(degrees: 359.6, mirrored: false, expected: "none", size: FrameSize(width: 1280, height: 720)),
        OrientationCase(degrees: 0, mirrored: true, expected: "mirror horizontal", size: FrameSize(width: 1280, height: 720)),
        OrientationCase(degrees: 90, mirrored: true, expected: "rotate 90 | mirror horizontal", size: FrameSize(width: 720, height: 1280)),
        OrientationCase(degrees: 180, mirrored: true, expected: "mirror vertical", size: FrameSize(width: 1280, height: 720)),
        OrientationCase(degrees: 270, mirrored: true, expected: "rotate 90 | mirror vertical", size: FrameSize(width: 720, height: 1280)),
        OrientationCase(degrees: 30, mirrored: false, expected: "rotate 30", size: nil),
        OrientationCase(degrees: -45, mirrored: false, expected: "rotate -45", size: nil),
        OrientationCase(degrees: 30, mirrored: true, expected: "rotate 150", size: nil),
    ])
    func orientationFromTheDisplayMatrix(_ c: OrientationCase) throws {
        let matrix = DisplayMatrix.rotation(clockwise: c.degrees, mirrored: c.mirrored)
        let fix = OrientationFix(matrix: matrix)
        let described = fix.isIdentity ? "none" : fix.filters.map(Self.describe).joined(separator: " | ")
        #expect(described == c.expected)
        // The same rule sizes the output of run, snapshot, estimate, probe and the presets.
        let plan = try Self.plan("", facts: Self.facts(matrix: matrix))
        #expect(plan.geometry.orientation == fix)
        let expectedSize = try c.size ?? Rotate(degrees: fix.arbitraryDegrees ?? 0).outputSize(for: FrameSize(width: 1280, height: 720))
        #expect(plan.geometry.chainOutputSize == expectedSize)
        let kept = try Self.plan("", facts: Self.facts(matrix: matrix)) { $0.orientation = .keep }
        #expect(kept.geometry.orientation.isIdentity)
        #expect(kept.geometry.chainOutputSize == FrameSize(width: 1280, height: 720))
    }

    static func describe(_ filter: any Filter) -> String {
        if let r = filter as? Rotate { return "rotate \(Int(r.degrees.rounded()))" }
        return filter.description
    }

    @Test func aMirroredMatrixIsNotAPureRotation() {
        #expect(DisplayMatrix.rotation(clockwise: 90, mirrored: true).isMirrored)
        #expect(!DisplayMatrix.rotation(clockwise: 90).isMirrored)
        #expect(abs(DisplayMatrix.rotation(clockwise: -90).rotationClockwise + 90) < 1e-6)
    }

    // MARK: Segment schedule

    struct ScheduleCase: CustomTestStringConvertible, Sendable {
        var rate: Rational
        var seconds: Double
        /// ceil(j × D × rate) for j = 0…9, computed with Python's exact fractions.
        var firstTicks: [Int64]
        var tickOfSegment1000: Int64
        var testDescription: String { "\(rate) fps, \(seconds) s" }
    }

    @Test(arguments: [
        ScheduleCase(rate: Rational(24000, 1001), seconds: 2, firstTicks: [0, 48, 96, 144, 192, 240, 288, 336, 384, 432], tickOfSegment1000: 47953),
        ScheduleCase(rate: Rational(24000, 1001), seconds: 2.002, firstTicks: [0, 48, 96, 144, 192, 240, 288, 336, 384, 432], tickOfSegment1000: 48000),
        ScheduleCase(rate: Rational(24000, 1001), seconds: 4, firstTicks: [0, 96, 192, 288, 384, 480, 576, 672, 768, 864], tickOfSegment1000: 95905),
        ScheduleCase(rate: Rational(24000, 1001), seconds: 6, firstTicks: [0, 144, 288, 432, 576, 720, 864, 1007, 1151, 1295], tickOfSegment1000: 143857),
        ScheduleCase(rate: Rational(24000, 1001), seconds: 6.006, firstTicks: [0, 144, 288, 432, 576, 720, 864, 1008, 1152, 1296], tickOfSegment1000: 144000),
        ScheduleCase(rate: Rational(30000, 1001), seconds: 2, firstTicks: [0, 60, 120, 180, 240, 300, 360, 420, 480, 540], tickOfSegment1000: 59941),
        ScheduleCase(rate: Rational(30000, 1001), seconds: 2.002, firstTicks: [0, 60, 120, 180, 240, 300, 360, 420, 480, 540], tickOfSegment1000: 60000),
        ScheduleCase(rate: Rational(30000, 1001), seconds: 4, firstTicks: [0, 120, 240, 360, 480, 600, 720, 840, 960, 1079], tickOfSegment1000: 119881),
        ScheduleCase(rate: Rational(30000, 1001), seconds: 6, firstTicks: [0, 180, 360, 540, 720, 900, 1079, 1259, 1439, 1619], tickOfSegment1000: 179821),
        ScheduleCase(rate: Rational(30000, 1001), seconds: 6.006, firstTicks: [0, 180, 360, 540, 720, 900, 1080, 1260, 1440, 1620], tickOfSegment1000: 180000),
        ScheduleCase(rate: Rational(25, 1), seconds: 2, firstTicks: [0, 50, 100, 150, 200, 250, 300, 350, 400, 450], tickOfSegment1000: 50000),
        ScheduleCase(rate: Rational(25, 1), seconds: 2.002, firstTicks: [0, 51, 101, 151, 201, 251, 301, 351, 401, 451], tickOfSegment1000: 50050),
        ScheduleCase(rate: Rational(25, 1), seconds: 4, firstTicks: [0, 100, 200, 300, 400, 500, 600, 700, 800, 900], tickOfSegment1000: 100000),
        ScheduleCase(rate: Rational(25, 1), seconds: 6, firstTicks: [0, 150, 300, 450, 600, 750, 900, 1050, 1200, 1350], tickOfSegment1000: 150000),
        ScheduleCase(rate: Rational(25, 1), seconds: 6.006, firstTicks: [0, 151, 301, 451, 601, 751, 901, 1052, 1202, 1352], tickOfSegment1000: 150150),
        ScheduleCase(rate: Rational(30, 1), seconds: 2, firstTicks: [0, 60, 120, 180, 240, 300, 360, 420, 480, 540], tickOfSegment1000: 60000),
        ScheduleCase(rate: Rational(30, 1), seconds: 2.002, firstTicks: [0, 61, 121, 181, 241, 301, 361, 421, 481, 541], tickOfSegment1000: 60060),
        ScheduleCase(rate: Rational(30, 1), seconds: 4, firstTicks: [0, 120, 240, 360, 480, 600, 720, 840, 960, 1080], tickOfSegment1000: 120000),
        ScheduleCase(rate: Rational(30, 1), seconds: 6, firstTicks: [0, 180, 360, 540, 720, 900, 1080, 1260, 1440, 1620], tickOfSegment1000: 180000),
        ScheduleCase(rate: Rational(30, 1), seconds: 6.006, firstTicks: [0, 181, 361, 541, 721, 901, 1082, 1262, 1442, 1622], tickOfSegment1000: 180180),
        ScheduleCase(rate: Rational(50, 1), seconds: 2, firstTicks: [0, 100, 200, 300, 400, 500, 600, 700, 800, 900], tickOfSegment1000: 100000),
        ScheduleCase(rate: Rational(50, 1), seconds: 2.002, firstTicks: [0, 101, 201, 301, 401, 501, 601, 701, 801, 901], tickOfSegment1000: 100100),
        ScheduleCase(rate: Rational(50, 1), seconds: 4, firstTicks: [0, 200, 400, 600, 800, 1000, 1200, 1400, 1600, 1800], tickOfSegment1000: 200000),
        ScheduleCase(rate: Rational(50, 1), seconds: 6, firstTicks: [0, 300, 600, 900, 1200, 1500, 1800, 2100, 2400, 2700], tickOfSegment1000: 300000),
        ScheduleCase(rate: Rational(50, 1), seconds: 6.006, firstTicks: [0, 301, 601, 901, 1202, 1502, 1802, 2103, 2403, 2703], tickOfSegment1000: 300300),
        ScheduleCase(rate: Rational(60, 1), seconds: 2, firstTicks: [0, 120, 240, 360, 480, 600, 720, 840, 960, 1080], tickOfSegment1000: 120000),
        ScheduleCase(rate: Rational(60, 1), seconds: 2.002, firstTicks: [0, 121, 241, 361, 481, 601, 721, 841, 961, 1082], tickOfSegment1000: 120120),
        ScheduleCase(rate: Rational(60, 1), seconds: 4, firstTicks: [0, 240, 480, 720, 960, 1200, 1440, 1680, 1920, 2160], tickOfSegment1000: 240000),
        ScheduleCase(rate: Rational(60, 1), seconds: 6, firstTicks: [0, 360, 720, 1080, 1440, 1800, 2160, 2520, 2880, 3240], tickOfSegment1000: 360000),
        ScheduleCase(rate: Rational(60, 1), seconds: 6.006, firstTicks: [0, 361, 721, 1082, 1442, 1802, 2163, 2523, 2883, 3244], tickOfSegment1000: 360360),
    ])
    func segmentSchedule(_ c: ScheduleCase) {
        let schedule = SegmentSchedule(grid: TickGrid(rate: c.rate), seconds: c.seconds)
        for (j, tick) in c.firstTicks.enumerated() { #expect(schedule.firstTick(ofSegment: Int64(j)) == tick) }
        #expect(schedule.firstTick(ofSegment: 1000) == c.tickOfSegment1000)
        // Every tick up to segment 10 starts a segment exactly when the table says so.
        let starts = Set(c.firstTicks)
        for k in 0...c.firstTicks.last! + 1 {
            #expect(schedule.startsSegment(tick: k) == starts.contains(k), "tick \(k)")
        }
        #expect(schedule.startsSegment(tick: c.tickOfSegment1000))
        #expect(!schedule.startsSegment(tick: c.tickOfSegment1000 + 1))
        #expect(schedule.segment(ofTick: c.tickOfSegment1000) == 1000)
        #expect(schedule.segment(ofTick: c.tickOfSegment1000 - 1) == 999)
    }

    @Test func hlsPlansOneScheduleForEncoderAndWriter() throws {
        let plan = try Self.plan("", output: "hls/index.m3u8") { $0.hls.segmentDuration = 2.002; $0.frameRate = Rational(30000, 1001) }
        let schedule = try #require(plan.segmentSchedule)
        #expect(schedule.duration == Rational(1001, 500))
        #expect(plan.timing == .ticks(TickGrid(rate: Rational(30000, 1001))))
        #expect(plan.renditions.allSatisfy { $0.encoder.keyframeInterval == .frames(60) && $0.encoder.fixedKeyframeCadence })
        #expect(plan.hlsOptions?.playlistType == .vod)
        let live = try Self.plan("", output: "hls/index.m3u8", facts: Self.facts(live: true))
        #expect(live.hlsOptions?.playlistType == .live)
        #expect(live.maxLatency != nil)
    }

    @Test func timingKeepsTimestampsUnlessAskedForARate() throws {
        #expect(try Self.plan("").timing == .sourceTimestamps(nominalRate: Rational(30, 1)))
        #expect(try Self.plan("") { $0.frameRate = Rational(24, 1) }.timing == .ticks(TickGrid(rate: Rational(24, 1))))
        #expect(try Self.plan("") { $0.realtime = true }.timing.isConstantRate)
    }

    @Test func ladderRungsFitTheChainsAspectWithTheirOwnPlaylists() throws {
        let plan = try Self.plan("rotate 90", output: "hls/master.m3u8") { config in
            config.renditions = [Rendition(size: FrameSize(width: 1280, height: 1280), bitRate: 2_000_000),
                                 Rendition(size: FrameSize(width: 640, height: 640), bitRate: nil)]
        }
        #expect(plan.renditions.map(\.size) == [FrameSize(width: 720, height: 1280), FrameSize(width: 360, height: 640)])
        #expect(plan.renditions.map(\.playlistPath) == ["hls/master_720x1280.m3u8", "hls/master_360x640.m3u8"])
        #expect(plan.renditions[0].encoder.maxRate == 2_400_000)
        guard case let .hls(_, _, master) = plan.output else { Issue.record("not HLS"); return }
        #expect(master == "hls/master.m3u8")
    }

    @Test func audioPlan() throws {
        func audio(_ codec: String, channels: Int, rate: Int, _ settings: AudioSettings, png: Bool = false) throws -> AudioPlan {
            var facts = Self.facts()
            facts.audio = AudioStreamInfo(index: 1, codecName: codec, isAAC: codec == "aac", sampleRate: rate, channels: channels,
                                          bitRate: nil, timeBase: Rational(1, rate))
            return try Self.plan("", output: png ? "f/%04d.png" : "out.mp4", facts: facts) { $0.audio = settings }.audio
        }
        #expect(try audio("aac", channels: 2, rate: 48000, .automatic) == .copy(stream: 1))
        #expect(try audio("opus", channels: 6, rate: 48000, .automatic) == .aac(stream: 1, sampleRate: 48000, channels: 2, bitRate: 128_000))
        #expect(try audio("mp3", channels: 1, rate: 22000, .automatic) == .aac(stream: 1, sampleRate: 22050, channels: 1, bitRate: 64_000))
        #expect(try audio("aac", channels: 2, rate: 48000, .aac(AACSettings(bitRate: 96_000)))
                == .aac(stream: 1, sampleRate: 48000, channels: 2, bitRate: 96_000))
        #expect(try audio("aac", channels: 2, rate: 48000, .none) == .none)
        #expect(try audio("aac", channels: 2, rate: 48000, .automatic, png: true) == .none)
    }

    /// The encoder's keyframe interval is the schedule's longest segment, so x264 never adds a
    /// keyframe the schedule did not ask for: brute force over durations that are not a whole
    /// number of ticks, checked against every segment the schedule cuts.
    @Test(arguments: [(2.01, Rational(30, 1)), (2.002, Rational(30, 1)), (6.006, Rational(60, 1)), (1.5, Rational(25, 1)),
                      (2.0, Rational(30000, 1001)), (0.7, Rational(24000, 1001))] as [(Double, Rational)])
    func keyframeIntervalCoversTheLongestSegment(_ seconds: Double, _ rate: Rational) throws {
        let plan = try Self.plan("", output: "hls/index.m3u8") { $0.hls.segmentDuration = seconds; $0.frameRate = rate }
        let schedule = try #require(plan.segmentSchedule)
        let lengths = (0..<400).map { schedule.firstTick(ofSegment: $0 + 1) - schedule.firstTick(ofSegment: $0) }
        guard case let .frames(interval)? = plan.renditions.first?.encoder.keyframeInterval else {
            Issue.record("no keyframe interval in frames"); return
        }
        #expect(Int64(interval) == lengths.max(), "interval \(interval), segments \(Set(lengths).sorted())")
    }

    /// One rule for keyframes: segment starts, a shard's first tick, input keyframes when asked; nothing else.
    @Test func keyframeRuleIsTheScheduleTheShardAndTheSource() throws {
        let hls = try Self.plan("", output: "hls/index.m3u8") { $0.hls.segmentDuration = 2 }
        for tick in Int64(0)..<200 {
            #expect(hls.keyframes.forces(at: tick, sourceKeyframe: false) == (tick % 60 == 0), "tick \(tick)")
            #expect(hls.keyframes.forces(at: tick, sourceKeyframe: true) == (tick % 60 == 0), "a source keyframe alone does not count")
        }
        let file = try Self.plan("") { $0.keyframesAtSource = true; $0.frameRate = Rational(30, 1) }
        #expect(file.keyframes.forces(at: 7, sourceKeyframe: true))
        #expect(!file.keyframes.forces(at: 7, sourceKeyframe: false))
        let shard = try Self.plan("") {
            $0.frameRate = Rational(30, 1)
            $0.shard = ShardWindow(start: 300, end: 600, encodeFrom: 240, encodeUntil: 630, seekKeyframe: 7_000, tickOrigin: 12,
                                   firstSegment: 5, firstImageNumber: 301)
        }
        #expect(shard.keyframes.forces(at: 300, sourceKeyframe: false))
        #expect(!shard.keyframes.forces(at: 240, sourceKeyframe: true) && !shard.keyframes.forces(at: 301, sourceKeyframe: false))
        let window = try #require(shard.window)
        #expect(window.kept == 300..<600 && window.fed == 240..<630)
        #expect(window.seekKeyframe == 7_000 && window.tickOrigin == 12 && window.firstSegment == 5 && window.firstImageNumber == 301)
        #expect(try Self.plan("").window == nil)
    }

    /// A live input's stall timeout is decided by the plan: as asked, else from the playlist's target duration.
    @Test func stallTimeoutIsPlanned() throws {
        var live = Self.facts(live: true)
        // No playlist (a pushed input: RTMP, SRT, UDP): 5 s without a frame is a loss.
        #expect(try Self.plan("", output: "o.m3u8", facts: live).stallTimeout == .seconds(5))
        live.targetDuration = 6
        #expect(try Self.plan("", output: "o.m3u8", facts: live).stallTimeout == .seconds(3 * 6 + 10))
        #expect(try Self.plan("", output: "o.m3u8", facts: live) { $0.stallTimeout = .seconds(5) }.stallTimeout == .seconds(5))
        #expect(try Self.plan("").stallTimeout == nil, "a file never stalls")
    }

    /// `--overload adapt` is a live run's: files (no deadline) and `off` shed nothing; a live HLS
    /// output's encoder may be reopened at keyframes (low delay), a live MP4's may not.
    @Test func overloadIsPlannedForLiveRunsOnly() throws {
        var live = Self.facts(live: true)
        live.targetDuration = 2
        let hls = try #require(try Self.plan("", output: "o.m3u8", facts: live).overload)
        #expect(hls.steps.prefix(3) == [.encoderPreset(.faster), .encoderPreset(.veryfast), .encoderPreset(.superfast)] && hls.window == 3)
        #expect(try Self.plan("", output: "o.m3u8", facts: live) { $0.overload = .off }.overload == nil)
        #expect(try Self.plan("", output: "o.m3u8").overload == nil, "a file has no deadline")
        #expect(try Self.plan("", output: "o.m3u8") { $0.realtime = true }.overload == nil)
        let mp4 = try #require(try Self.plan("", output: "o.mp4", facts: live).overload)
        #expect(!mp4.steps.contains { if case .encoderPreset = $0 { true } else { false } })
    }

    /// A file served while it runs is EVENT; asked for, the type stands; live stays live.
    @Test func servedWhileRunningMakesAFileAnEventPlaylist() throws {
        #expect(try Self.plan("", output: "o.m3u8") { $0.servedWhileRunning = true }.hlsOptions?.playlistType == .event)
        #expect(try Self.plan("", output: "o.m3u8").hlsOptions?.playlistType == .vod)
        #expect(try Self.plan("", output: "o.m3u8") { $0.servedWhileRunning = true; $0.hlsPlaylistType = .vod }.hlsOptions?.playlistType == .vod)
        #expect(try Self.plan("", output: "o.m3u8", facts: Self.facts(live: true)) { $0.servedWhileRunning = true }
            .hlsOptions?.playlistType == .live)
    }

    /// The master playlist's rates before any segment come from the planned audio, not an assumed rate.
    @Test func plannedAudioRate() throws {
        var facts = Self.facts()
        facts.audio = AudioStreamInfo(index: 1, codecName: "opus", isAAC: false, sampleRate: 48000, channels: 2, bitRate: 160_000,
                                      timeBase: Rational(1, 48000))
        #expect(try Self.plan("", facts: facts) { $0.audio = .aac(AACSettings(bitRate: 96_000)) }.audioBitRate == 96_000)
        facts.audio?.isAAC = true
        #expect(try Self.plan("", facts: facts).audioBitRate == 160_000, "a copied track keeps its own rate")
        #expect(try Self.plan("", facts: facts) { $0.audio = .none }.audioBitRate == nil)
    }

    @Test func aChainThatDoesNotFitFailsAtPlanning() {
        #expect(throws: JobError.self) { try Self.plan("crop 2000x100+0+0") }
    }
}
