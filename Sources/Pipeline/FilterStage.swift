import Filters
import Logging
import Foundation
import MediaIO
import Synchronization

/// What travels with one output picture besides its pixels, from the tick stage to every
/// rendition's encoder (broadcast's ancillary data): the A/53 closed-caption bytes the caption
/// pacer gave this picture. One value, so a per-picture mark (a splice) can join it.
struct Ancillary: Sendable, Equatable {
    /// `cc_data` triplets for this picture (empty: none; any the source picture had are removed).
    var captions: [UInt8] = []

    static let none = Ancillary()
}

/// What the tick stage asks of the filter stage: a picture to show at an output time, or the last
/// picture again (a repeated tick is neither filtered nor converted again). Each carries the
/// output picture's own ancillary data: a repeat never repeats the last picture's captions.
enum FilterWork: @unchecked Sendable {
    /// `keyframe`: the encoder makes this picture a keyframe (the plan's `KeyframeRule`, applied
    /// by the tick stage).
    case show(Frame, pts: Int64, duration: Int64, keyframe: Bool = false, ancillary: Ancillary = .none)
    /// `cheap`: the encoders spend as little as they can on it (`EncodeWork.repeatLast`).
    case repeatLast(pts: Int64, duration: Int64, keyframe: Bool = false, cheap: Bool = false, ancillary: Ancillary = .none)
    /// `--on-input-loss slate=FILE` while the input is lost: the slate as it is, each output's
    /// size, not through the chain (a mirror or a blur must not touch the words on it).
    case slate(pts: Int64, duration: Int64, keyframe: Bool = false, ancillary: Ancillary = .none)
    /// `--overload adapt`: the encoders take this x264 preset from the next keyframe (the next
    /// item's, which the tick stage sends right after it). Passed on to every encode stage.
    case usePreset(EncoderSpeedPreset)
}

/// The filter stage: runs the plan's video path on each new picture and hands every rendition's
/// encode stage its input. The chain runs once per picture; each rendition scales from its result.
/// A live chain change (`ChainControl`) is taken between two pictures: every picture is filtered
/// wholly by one chain.
final class FilterStage: @unchecked Sendable {
    let work: Channel<FilterWork>
    private var path: VideoPath
    private let spec: FilterSpec
    private let outputs: [EncodeStage]
    /// The RGB chain and each rendition's converter. On the planar path they are made only if a
    /// frame needs them (a mid-stream change of format or size): unused, they are 20–30 MB at 1080p.
    private var rgb: (filter: FrameFilter, converters: [RenditionConverter])?
    private var planar: PlanarPath?
    /// The chain as run (orientation fix, the user's chain, alignment).
    private var chain: FilterChain
    private let timing: TimingRecorder
    private let filtered = Atomic<Int>(0)
    private let planarFrames = Atomic<Int>(0)
    /// The chain's per-pass times, published for progress readers on other threads.
    private let publishedPasses = Mutex<[FilterPassTime]>([])
    /// Output seconds per pts unit, and whether pts counts ticks (else: a source timestamp).
    private let timeBase: Double
    private let constantRate: Bool
    private var shownFrames = 0
    /// The last picture shown, kept when a repeated tick may need it filtered again (a chain that
    /// changes with time, or one that can be changed live).
    private var lastFrame: Frame?
    private let control: ChainControl?
    private let changes = Mutex<[ChainControl.Applied]>([])
    /// The path each picture took, from the tick it started: the plan's, a live change's re-plan,
    /// or RGB for pictures the planes do not take (a stream that changes format mid-way).
    private let pathLog = Mutex<[VideoPathInterval]>([])
    private let log: Logger
    /// Whether this picture's passes may split across cores, and the work it is decided from.
    private var bands = BandPolicy()
    private var workNanoseconds: UInt64 = 0

    init(spec: FilterSpec, outputs: [EncodeStage], control: ChainControl? = nil,
         log: Logger = Logger(label: "livefilter.pipeline"), timing: TimingRecorder) throws(MediaError) {
        self.spec = spec
        path = spec.path
        chain = spec.geometry.chain
        timeBase = spec.timeBase.doubleValue
        constantRate = spec.constantRate
        self.outputs = outputs
        self.timing = timing
        self.control = control
        self.log = log
        work = Channel(capacity: 2)
        planar = path == .planar ? try PlanarPath(chain: chain, spec: spec) : nil
        // The RGB path's settings are checked here, at start-up. The planar path makes the RGB chain
        // only if a frame needs it (one that changes format or size mid-stream).
        if let file = spec.slate {
            slates = try spec.renditionSizes.map { size throws(MediaError) in
                try Slate.frame(path: file, size: size, color: spec.color)
            }
        } else {
            slates = []
        }
        if path == .rgbChain { rgb = try makeRGB(chain) }
    }

    /// `--on-input-loss slate=FILE`: the slate at each output's size, ready for its encoder.
    private let slates: [Frame]

    private func makeRGB(_ chain: FilterChain) throws(MediaError) -> (filter: FrameFilter, converters: [RenditionConverter]) {
        let filter = try FrameFilter(video: spec.input, chain: chain, assumedMatrix: spec.color.matrix, timing: timing)
        let converters = try spec.renditionSizes.map { size throws(MediaError) in
            try RenditionConverter(size: size, chainOutputSize: spec.geometry.chainOutputSize,
                                   rgbEncoder: spec.rgbEncoder, color: spec.color, timing: timing)
        }
        return (filter, converters)
    }

    func start(in group: StageGroup) {
        group.onCancel { [work] in work.cancel() }
        group.start("filter") { [self] in try run() }
    }

    private func run() throws {
        defer {
            publishFinalPasses()
            for output in outputs { output.input.finish() }
        }
        while let item = try work.receive() {
            try Parallel.withBands(atMost: bands.bands) { try take(item) }
            let before = bands.bands
            bands.record(busyNanoseconds: workNanoseconds, finishedAt: DispatchTime.now().uptimeNanoseconds)
            workNanoseconds = 0
            if bands.bands != before { log.debug("filter passes now split into at most \(bands.bands) bands") }
        }
    }

    private func take(_ item: FilterWork) throws {
        switch item {
        case let .show(frame, pts, duration, keyframe, ancillary):
            takeChainChange(at: pts)
            try show(frame, pts: pts, duration: duration, keyframe: keyframe, ancillary: ancillary)
        case let .repeatLast(pts, duration, keyframe, cheap, ancillary):
            let changed = takeChainChange(at: pts)
            if let frame = lastFrame, changed || chainVaries {
                // The same input picture, filtered again: by the new chain, or at this tick's time.
                try show(frame, pts: pts, duration: duration, keyframe: keyframe, ancillary: ancillary, reconvert: changed)
                return
            }
            for output in outputs {
                try output.input.send(.repeatLast(pts: pts, duration: duration, keyframe: keyframe, cheap: cheap, ancillary: ancillary))
            }
        case let .slate(pts, duration, keyframe, ancillary):
            takeChainChange(at: pts)
            for (output, slate) in zip(outputs, slates) {
                try output.input.send(.picture(slate.newReference(), remember: slate, pts: pts, duration: duration, keyframe: keyframe,
                                               ancillary: ancillary))
            }
        case let .usePreset(preset):
            for output in outputs { try output.input.send(.usePreset(preset)) }
        }
    }

    /// Runs `body` as the stage's work on this picture (not its waits on the encoders): the time
    /// `BandPolicy` decides from.
    private func working<R>(_ body: () throws -> R) rethrows -> R {
        let start = DispatchTime.now().uptimeNanoseconds
        defer { workNanoseconds += DispatchTime.now().uptimeNanoseconds - start }
        return try body()
    }

    /// Whether the chain as run changes with time alone: then a repeated tick is filtered again.
    private var chainVaries: Bool {
        path == .planar ? planar?.isTimeDependent == true : (path == .rgbChain && rgb?.filter.isTimeDependent == true)
    }

    /// Applies a waiting chain change before the picture of tick `pts`; whether there was one.
    @discardableResult
    private func takeChainChange(at pts: Int64) -> Bool {
        guard let control, let pending = control.take() else { return false }
        // Re-planned by the plan's own rule.
        let path = spec.replan.path(for: pending.geometry)
        do {
            let planar = path == .planar ? try PlanarPath(chain: pending.geometry.chain, spec: spec) : nil
            // The RGB chain too when it runs there, or stands in for frames the planes do not take.
            let rgb = try makeRGB(pending.geometry.chain)
            (self.planar, self.rgb, self.chain) = (planar, rgb, pending.geometry.chain)
            self.path = path
            let seconds = Double(pts) * timeBase
            control.applied(pending, tick: Int(pts), seconds: seconds)
            changes.withLock { $0 = control.history }
            log.notice("chain changed", metadata: ["tick": "\(pts)", "seconds": "\(seconds)", "chain": "\(pending.chain)",
                                                   "path": "\(self.path)"])
        } catch {
            pending.reply(.failure(.changesGeometry("the new chain could not be set up: \(error)")))
        }
        return true
    }

    /// Every rendition's picture gets the same `ancillary` (a ladder's rungs carry the same captions).
    private func show(_ frame: Frame, pts: Int64, duration: Int64, keyframe: Bool, ancillary: Ancillary, reconvert: Bool = true) throws {
        // Fault injection for the overload tests: a chain too heavy for the machine, on any machine.
        if let ms = spec.slowPictureMilliseconds { usleep(ms * 1000) }
        if control != nil || chainVaries { lastFrame = frame }
        // A picture the stream changed to (another size or format mid-stream: a discontinuity, a
        // publisher's new settings) is scaled on the RGB path, as a chain's pictures would be.
        if path == .passthrough, PlanarFrameFilter.accepts(frame, size: spec.input.size) {
            took(.passthrough, at: pts)
            // The decoder's picture type would force keyframes where the source had them.
            let input = frame.newReference()
            input.clearPictureType()
            for output in outputs {
                try output.input.send(.picture(input, remember: input, pts: pts, duration: duration, keyframe: keyframe, ancillary: ancillary))
            }
            return
        }
        if path == .planar, let planar, planar.accepts(frame) {
            took(.planar, at: pts)
            let time = frameTime(of: frame, pts: pts)
            let pictures = try working { try timing.measure(.filter) { () throws(MediaError) in try planar.apply(frame, at: time) } }
            let count = planarFrames.add(1, ordering: .relaxed).newValue
            if count % 8 == 1 { publishedPasses.withLock { $0 = planar.passes } }
            for (output, picture) in zip(outputs, pictures) {
                try output.input.send(.picture(picture.newReference(), remember: picture, pts: pts, duration: duration, keyframe: keyframe,
                                               ancillary: ancillary))
            }
            return
        }
        try showRGB(frame, pts: pts, duration: duration, keyframe: keyframe, ancillary: ancillary, convert: reconvert)
    }

    private func showRGB(_ frame: Frame, pts: Int64, duration: Int64, keyframe: Bool, ancillary: Ancillary, convert: Bool) throws {
        if rgb == nil { rgb = try makeRGB(chain) }
        guard let (filter, converters) = rgb else { return }
        took(.rgbChain, at: pts)
        let time = frameTime(of: frame, pts: pts)
        let image = try working { try filter.filter(frame, at: time, convert: convert) }
        let count = filtered.add(1, ordering: .relaxed).newValue
        if count % 8 == 1 { publishedPasses.withLock { $0 = filter.passes } }
        for (output, converter) in zip(outputs, converters) {
            let converted = try working { try converter.convert(image) }
            try output.input.send(.picture(converted, remember: converted, pts: pts, duration: duration, keyframe: keyframe,
                                           ancillary: ancillary))
        }
    }

    /// Notes the path a picture took, when it is not the one the last took.
    private func took(_ path: VideoPath, at pts: Int64) {
        pathLog.withLock { log in
            guard log.last?.path != JobSummary.VideoPath(path) else { return }
            log.append(VideoPathInterval(fromTick: pts, seconds: Double(pts) * timeBase, path: JobSummary.VideoPath(path)))
        }
    }

    /// The output time of the picture shown at tick `pts`; counts the pictures shown.
    private func frameTime(of frame: Frame, pts: Int64) -> FrameTime {
        defer { shownFrames += 1 }
        return FrameTime(seconds: Double(pts) * timeBase, frame: constantRate ? Int(pts) : shownFrames,
                         sourceSeconds: frame.timestamp.map { Double($0) * spec.input.timeBase.doubleValue },
                         wallClock: Date().timeIntervalSince1970)
    }

    /// Pictures that went through the chain, on RGB or on the planes (progress counts these).
    var framesFiltered: Int { filtered.load(ordering: .relaxed) + planarFrames.load(ordering: .relaxed) }
    /// Per-pass times as last published (exact once the stage has ended and `publishFinalPasses` ran).
    var passes: [FilterPassTime] { publishedPasses.withLock { $0 } }
    /// The path each interval of the run took.
    var pathIntervals: [VideoPathInterval] { pathLog.withLock { $0 } }
    /// Live chain changes applied so far.
    var chainChanges: [ChainControl.Applied] { changes.withLock { $0 } }

    private func publishFinalPasses() {
        if let planar, planarFrames.load(ordering: .relaxed) > 0 {
            publishedPasses.withLock { $0 = planar.passes }
        } else if let filter = rgb?.filter {
            publishedPasses.withLock { $0 = filter.passes }
        }
    }
}
