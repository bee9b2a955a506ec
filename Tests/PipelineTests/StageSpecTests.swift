import Filters
import MediaIO
import Pipeline
import Testing

/// Each decision a stage used to take for itself, now the plan's: asserted on the plan's specs for
/// a configuration and the input's facts (issue 49).
struct StageSpecTests {
    static func facts(rate: Rational = Rational(30, 1), live: Bool = false, targetDuration: Int? = nil,
                      audio: AudioStreamInfo? = nil) -> InputFacts {
        let video = VideoStreamInfo(size: FrameSize(width: 1280, height: 720), frameRate: rate, colorSpace: .bt709)
        return InputFacts(url: "in.ts", video: video, audio: audio, isLive: live, duration: 10,
                          targetDuration: live ? targetDuration : nil)
    }

    static func plan(output: String = "out.mp4", facts: InputFacts = facts(),
                     configure: (inout JobConfiguration) -> Void = { _ in }) throws -> JobPlan {
        var config = JobConfiguration(input: "in.ts", output: output)
        config.faults = FaultInjection()
        configure(&config)
        return try JobPlan(configuration: config, input: facts)
    }

    static func aac(bitRate: Int?) -> AudioStreamInfo {
        AudioStreamInfo(index: 1, codecName: "aac", isAAC: true, sampleRate: 48000, channels: 2, bitRate: bitRate, timeBase: Rational(1, 48000))
    }

    /// The tick loop's catch-up ends within the latency bound the plan gives it (it has no default
    /// of its own); a file has no live control at all.
    @Test func catchUpIsBoundedByThePlannedLatency() throws {
        let live = try #require(try Self.plan(output: "o.m3u8", facts: Self.facts(live: true, targetDuration: 2)).liveSpec)
        #expect(live.catchUpBound == .seconds(10) && live.maxLatency == .seconds(10))
        let asked = try Self.plan(output: "o.m3u8", facts: Self.facts(live: true)) { $0.maxLatency = .seconds(4) }
        #expect(asked.liveSpec?.catchUpBound == .seconds(4))
        #expect(asked.tickSpec.live == asked.liveSpec)
        #expect(try Self.plan().liveSpec == nil && Self.plan().tickSpec.live == nil)
    }

    /// A returning input is due a join's distance later, and the clock starts late by the slack the
    /// join leaves: one target duration at the edge, three segments back none; 0.5 s pushed.
    @Test func resumeAndStartDelaysArePlanned() throws {
        let pushed = try #require(try Self.plan(output: "o.m3u8", facts: Self.facts(live: true)).liveSpec)
        #expect(pushed.resumeDelay == .milliseconds(500) && pushed.startDelay == .milliseconds(500))
        #expect(pushed.lossTime == .seconds(5))
        let edge = try #require(try Self.plan(output: "o.m3u8", facts: Self.facts(live: true, targetDuration: 6)).liveSpec)
        #expect(edge.resumeDelay == .seconds(6) && edge.startDelay == .seconds(6))
        #expect(edge.lossTime == .seconds(3 * 6 + 10))
        let behind = try #require(try Self.plan(output: "o.m3u8", facts: Self.facts(live: true, targetDuration: 6)) {
            $0.inputOptions.liveStart = .holdback
        }.liveSpec)
        #expect(behind.resumeDelay == .seconds(18) && behind.startDelay == .zero)
    }

    /// PNG frames or x264, decided once; the encoder's settings are the rendition's.
    @Test func theCodecIsPlanned() throws {
        let png = try Self.plan(output: "f/%05d.png")
        #expect(png.encodeSpecs.map(\.codec) == [.png])
        let mp4 = try Self.plan()
        #expect(mp4.encodeSpecs.map(\.codec) == [.h264(mp4.renditions[0].encoder)])
        #expect(mp4.encodeSpecs[0].timeBase == mp4.input.video.timeBase, "timestamps kept: the input's time base")
        let hls = try Self.plan(output: "o.m3u8")
        #expect(hls.encodeSpecs[0].timeBase == Rational(1, 30), "on the tick clock: ticks")
    }

    /// The overload's preset ladder, with what each reopen needs: the preset and the stream's own
    /// parameter sets; a step back reopens at the asked preset the same way. None where presets do
    /// not step (an MP4 output: no low delay; a file; `--overload off`; PNG).
    @Test func theOverloadsEncoderSettingsArePlanned() throws {
        let live = Self.facts(live: true, targetDuration: 2)
        let hls = try Self.plan(output: "o.m3u8", facts: live)
        let steps = hls.encodeSpecs[0].presetSteps
        #expect(Set(steps.keys) == [.medium, .faster, .veryfast, .superfast, .ultrafast])
        for (preset, settings) in steps {
            #expect(settings.speedPreset == preset && settings.parameterSetsOf == .medium)
            var same = settings
            same.speedPreset = .medium
            same.parameterSetsOf = hls.renditions[0].encoder.parameterSetsOf
            #expect(same == hls.renditions[0].encoder, "only the preset changes")
        }
        #expect(try Self.plan(output: "o.mp4", facts: live).encodeSpecs[0].presetSteps.isEmpty)
        #expect(try Self.plan(output: "o.m3u8", facts: live) { $0.overload = .off }.encodeSpecs[0].presetSteps.isEmpty)
        #expect(try Self.plan(output: "o.m3u8").encodeSpecs[0].presetSteps.isEmpty)
    }

    /// A ladder's audio rendition sits beside the master; MP4 and MOV are written index first.
    @Test func theAudioRenditionsPathAndFaststartArePlanned() throws {
        let ladder: (inout JobConfiguration) -> Void = {
            $0.renditions = [Rendition(size: FrameSize(width: 640, height: 360), bitRate: 800_000),
                             Rendition(size: FrameSize(width: 1280, height: 720), bitRate: 2_500_000)]
        }
        let withAudio = try Self.plan(output: "/srv/out/live.m3u8", facts: Self.facts(audio: Self.aac(bitRate: 128_000)), configure: ladder)
        #expect(withAudio.audioPlaylistPath == "/srv/out/live_audio.m3u8")
        #expect(withAudio.isLadder)
        guard case let .hls(hls) = withAudio.outputSpec.kind else { Issue.record("not HLS"); return }
        #expect(hls.playlists == ["/srv/out/live_640x360.m3u8", "/srv/out/live_1280x720.m3u8"] && hls.masterPath == "/srv/out/live.m3u8")
        #expect(try Self.plan(output: "out/live.m3u8", configure: ladder).audioPlaylistPath == nil, "no audio, no rendition")
        #expect(try Self.plan(output: "out/one.m3u8", facts: Self.facts(audio: Self.aac(bitRate: nil))).audioPlaylistPath == nil,
                "one rendition carries its audio")
        for (output, faststart) in [("a.mp4", true), ("a.mov", true), ("a.mkv", false), ("a.ts", false)] {
            guard case let .file(_, _, planned) = try Self.plan(output: output).outputSpec.kind else {
                Issue.record("\(output): not a file output")
                continue
            }
            #expect(planned == faststart, "\(output)")
        }
        #expect(try Self.plan().outputSpec.audioOnlyFaststart == false, "an audio-only part is read by the join, not a player")
    }

    /// LL-HLS parts in whole ticks (at most the part target), none for VOD (with a warning): the
    /// writer takes the plan's count.
    @Test func partTicksArePlanned() throws {
        let event: (inout JobConfiguration) -> Void = { $0.hls.partDuration = 0.5; $0.servedWhileRunning = true }
        #expect(try Self.plan(output: "o.m3u8", configure: event).partTicks == 15)
        let ntsc = Self.facts(rate: Rational(30000, 1001))
        #expect(try Self.plan(output: "o.m3u8", facts: ntsc, configure: event).partTicks == 14)
        let live = try Self.plan(output: "o.m3u8", facts: Self.facts(live: true, targetDuration: 2)) { $0.hls.partDuration = 0.3 }
        #expect(live.partTicks == 9 && live.warnings.isEmpty)
        let vod = try Self.plan(output: "o.m3u8") { $0.hls.partDuration = 0.5 }
        #expect(vod.partTicks == nil)
        #expect(vod.warnings.contains { $0.contains("VOD") }, "\(vod.warnings)")
        #expect(try Self.plan(output: "o.m3u8", configure: { $0.servedWhileRunning = true }).partTicks == nil)
    }

    /// Segment ends are marked only where there are segments: a live playlist, not a pushed stream
    /// or a file; the decode spec carries the same value.
    @Test func segmentsAreDecodedWholeForLivePlaylistsOnly() throws {
        let playlist = try Self.plan(output: "o.m3u8", facts: Self.facts(live: true, targetDuration: 2))
        #expect(playlist.decodesSegmentsWhole && playlist.decodeSpec.marksSegmentEnds)
        let pushed = try Self.plan(output: "o.m3u8", facts: Self.facts(live: true))
        #expect(!pushed.decodesSegmentsWhole && !pushed.decodeSpec.marksSegmentEnds)
        #expect(pushed.decodeSpec.releasesHeldPictures, "a pushed input's decoder still gives up held pictures")
        let file = try Self.plan()
        #expect(!file.decodesSegmentsWhole && !file.decodeSpec.marksSegmentEnds && file.decodeSpec.readCapacity == 64)
        #expect(playlist.decodeSpec.readCapacity == 8192)
    }

    /// A size estimate reads the plan's audio: a copied AAC track of unstated rate counts 128 kb/s,
    /// a stated one its own; an encoded one the encoder's; none nothing.
    @Test func theEstimatesAudioRateIsThePlans() throws {
        #expect(try Self.plan(facts: Self.facts(audio: Self.aac(bitRate: nil))).estimatedAudioBitRate == 128_000)
        #expect(try Self.plan(facts: Self.facts(audio: Self.aac(bitRate: 96_000))).estimatedAudioBitRate == 96_000)
        let opus = AudioStreamInfo(index: 1, codecName: "opus", isAAC: false, sampleRate: 48000, channels: 6, bitRate: nil,
                                   timeBase: Rational(1, 48000))
        #expect(try Self.plan(facts: Self.facts(audio: opus)).estimatedAudioBitRate == 128_000)
        #expect(try Self.plan(facts: Self.facts(audio: opus)) { $0.audio = .aac(AACSettings(bitRate: 64_000)) }.estimatedAudioBitRate == 64_000)
        #expect(try Self.plan().estimatedAudioBitRate == 0)
        #expect(try Self.plan(output: "f/%05d.png", facts: Self.facts(audio: opus)).estimatedAudioBitRate == 0, "PNG has no audio")
        #expect(try Self.plan() { $0.video.rateControl = .averageBitrate(1_000_000) }.videoBitRate == 1_000_000)
        #expect(try Self.plan().videoBitRate == nil, "quality-based: no estimate")
    }

    /// One limit on a stated frame rate, for the plan and the presets alike: above 240 fps it is a
    /// container's time base, and the output takes 30 fps.
    @Test(arguments: [(Rational(240, 1), Rational(240, 1)), (Rational(1000, 1), Rational(30, 1)),
                      (Rational(300, 1), Rational(30, 1)), (Rational(60000, 1001), Rational(60000, 1001))])
    func aStatedFrameRateIsBelievedUpTo240(stated: Rational, planned: Rational) throws {
        let facts = Self.facts(rate: stated)
        #expect(try Self.plan(output: "o.m3u8", facts: facts).timing.rate == planned)
        #expect(try Self.plan(facts: facts) { $0.preset = .compact }.timing.rate == planned)
        #expect(JobPlan.maxPlausibleFrameRate == 240)
    }

    /// The test hooks are read from the environment once, into the configuration; the plan hands
    /// each stage its value.
    @Test func faultInjectionReachesTheStagesThroughThePlan() throws {
        let hooks = FaultInjection(environment: ["LIVEFILTER_FAULT_ENCODER_AFTER": "3", "LIVEFILTER_FAULT_SLOW_PICTURE_MS": "40",
                                                 "LIVEFILTER_PIN_OVERLOAD_LEVEL": "2", "OTHER": "1"])
        #expect(hooks == FaultInjection(encoderFailsAfter: 3, slowPictureMilliseconds: 40, pinnedOverloadLevel: 2))
        #expect(FaultInjection(environment: [:]) == FaultInjection())
        let plan = try Self.plan(output: "o.m3u8", facts: Self.facts(live: true, targetDuration: 2)) { $0.faults = hooks }
        #expect(plan.encodeSpecs.map(\.failsAfter) == [3])
        #expect(plan.filterSpec.slowPictureMilliseconds == 40)
        #expect(plan.liveSpec?.overload?.pinnedLevel == 2)
        let none = try Self.plan(output: "o.m3u8", facts: Self.facts(live: true, targetDuration: 2))
        #expect(none.encodeSpecs[0].failsAfter == nil && none.filterSpec.slowPictureMilliseconds == nil
                && none.liveSpec?.overload?.pinnedLevel == nil)
    }
}
