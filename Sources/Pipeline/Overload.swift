import Foundation
import MediaIO
import Synchronization

/// `--overload`: what a live run does when the machine cannot keep up.
public enum OverloadPolicy: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Shed cost in the plan's order (`OverloadPlan.steps`) while behind; take it back when the load goes.
    case adapt
    /// Today's behaviour: every picture decoded and encoded as asked; a late tick repeats the last picture.
    case off

    public var description: String { rawValue }
}

/// One way to spend less CPU, cheapest for the viewer first.
public enum OverloadStep: Sendable, Equatable, CustomStringConvertible {
    /// The decoder skips pictures nothing references (B-pictures of most encoders): spread evenly
    /// through each GOP. First when the input's rate is above the output's (the tick grid drops
    /// pictures anyway), last otherwise (then they are pictures a tick would have shown).
    case skipNonReferencePictures
    /// x264 one preset faster, from the next keyframe (a segment's start: a new IDR anyway).
    /// Its parameter sets are the stream's (`VideoEncoderSettings.parameterSetsOf`).
    case encoderPreset(EncoderSpeedPreset)
    /// One new picture in `every` is not shown (the tick repeats the last one, a cheap encode),
    /// spread evenly instead of a burst of repeats and drops. Non-reference pictures are the ones
    /// left out, never decoded, where the stream has them; else the tick stage leaves out every
    /// `every`-th picture after decoding it.
    case thinTicks(every: Int)

    var isPreset: Bool { if case .encoderPreset = self { true } else { false } }

    public var description: String {
        switch self {
        case .skipNonReferencePictures: "decode only reference pictures"
        case .encoderPreset(.ultrafast): "x264 preset ultrafast with the stream's coding tools"
        case let .encoderPreset(preset): "x264 preset \(preset.rawValue)"
        case let .thinTicks(every): "1 picture in \(every) not shown"
        }
    }
}

/// What a live run sheds under overload, decided once with the plan: the steps in order, and the
/// thresholds the controller keeps to. Nil in a plan for offline runs (no deadline) and `--overload off`.
public struct OverloadPlan: Sendable, Equatable {
    /// Level n has steps[0..<n] in force.
    public var steps: [OverloadStep]
    /// The encoder's preset as asked (level 0).
    public var basePreset: EncoderSpeedPreset
    /// Seconds over which the controller judges (at least one input segment: an HLS input's edge
    /// moves a segment at a time, and a run that keeps up reaches it once per segment).
    public var window: Double
    /// Behind the live edge by more than this at every moment of a window (never caught up) is
    /// falling behind.
    public var behindLimit: Double
    /// A tick whose frame is already read waits for the decoder while the run is less than this
    /// behind the live edge (`--max-latency`), instead of repeating the last picture and dropping
    /// the late one: shedding is the controller's, evenly, not the tick loop's, in bursts.
    public var waitBudget: Duration
    /// The level held for the whole run, the controller deciding nothing (`FaultInjection`: what
    /// each level saves, measured); clamped to the steps.
    public var pinnedLevel: Int?

    /// - Parameters:
    ///   - inputRate, tickRate: frames per second in and out (more in: the grid drops pictures anyway).
    ///   - preset: x264's preset as asked; steps go faster from it.
    ///   - presetSwaps: the encoder may be reopened at a keyframe (no reordering delay: x264 with
    ///     the low-delay tune), so a preset step changes nothing a player sees but quality.
    public init(inputRate: Double?, tickRate: Double, preset: EncoderSpeedPreset, presetSwaps: Bool,
                segmentSeconds: Double?, maxLatency: Duration?) {
        var steps: [OverloadStep] = []
        let gridDrops = (inputRate ?? tickRate) > tickRate * 1.25
        if gridDrops { steps.append(.skipNonReferencePictures) }
        if presetSwaps {
            // One preset at a time, down to ultrafast, each writing the stream's own parameter
            // sets (`VideoEncoderSettings.parameterSetsOf`): every sink takes them once, as a
            // global header, and a player never sees them change.
            let order = EncoderSpeedPreset.allCases
            if let at = order.firstIndex(of: preset), at > 0 {
                // At most four preset steps, the fastest: from medium, faster → veryfast →
                // superfast → ultrafast.
                steps += order[0..<at].reversed().suffix(4).map { OverloadStep.encoderPreset($0) }
            }
        }
        // Fewer new pictures, evenly: one in eight, then one in four, before the decoder skips
        // non-reference pictures (often every other one: a coarse step), then one in two. Not the
        // decoder's deblocking of non-reference pictures: it saved nothing measurable (BENCHMARKS.md).
        steps += [.thinTicks(every: 8), .thinTicks(every: 4)]
        if !gridDrops { steps.append(.skipNonReferencePictures) }
        steps.append(.thinTicks(every: 2))
        self.steps = steps
        basePreset = preset
        window = max(2, 1.5 * (segmentSeconds ?? 1))
        behindLimit = 0.5
        // The latency bound: past it the tick loop skips ahead to the edge anyway.
        waitBudget = maxLatency ?? .seconds(10)
    }

    /// What is in force at `level`.
    public func effect(at level: Int) -> OverloadEffect {
        var effect = OverloadEffect(preset: basePreset)
        for step in steps.prefix(level) {
            switch step {
            case .skipNonReferencePictures: effect.skipsNonReferencePictures = true
            case let .encoderPreset(preset): effect.preset = preset
            case let .thinTicks(every): effect.thinEvery = every
            }
        }
        return effect
    }
}

/// The settings a level puts in force, read by the stages.
public struct OverloadEffect: Sendable, Equatable {
    public var preset: EncoderSpeedPreset
    public var skipsNonReferencePictures = false
    /// One new picture in this many is not shown (nil: all are).
    public var thinEvery: Int?

    public init(preset: EncoderSpeedPreset, skipsNonReferencePictures: Bool = false, thinEvery: Int? = nil) {
        self.preset = preset
        self.skipsNonReferencePictures = skipsNonReferencePictures
        self.thinEvery = thinEvery
    }
}

/// Decides the overload level from what the tick loop sees, one window at a time: up a step when
/// the run stayed behind the live edge for a whole window and is not catching up; down a step
/// after three calm windows (at the edge and idle a quarter of the time) — slower down than up,
/// so a load just at the limit does not flap. Stages read the level's effect without locking.
public final class OverloadController: Sendable {
    public let plan: OverloadPlan
    /// A level change: from, to, the steps taken or given back (in the plan's order), and why.
    public struct Change: Sendable {
        public var from: Int, to: Int
        public var reason: String
        public var taken: Bool { to > from }
        public func steps(of plan: OverloadPlan) -> [OverloadStep] { Array(plan.steps[min(from, to)..<max(from, to)]) }
    }

    private struct Window {
        var start: ContinuousClock.Instant
        /// The output's time at the window's start: its progress over the window is the speed.
        var startOutput: Double
        var minBehind = Double.infinity
        var idle = 0.0
    }

    private struct State {
        var window: Window?
        var calmWindows = 0
        /// Calm windows a step back needs: doubled (up to 24) each time a step back was followed
        /// by a step up within four windows — a load at the limit is not flapped over.
        var calmNeeded = 3
        var lastStepBack: ContinuousClock.Instant?
        var cooldownUntil: ContinuousClock.Instant?
        var maxLevel = 0
        var changes: [(outputTime: Double, change: Change)] = []
    }

    private let levelValue = Atomic<Int>(0)
    private let state = Mutex(State())

    /// For measuring what each level saves (BENCHMARKS.md): the plan's `pinnedLevel`.
    private var pinned: Int? { plan.pinnedLevel }

    /// Each level's effect, made once: the stages read it per packet and per tick.
    private let effects: [OverloadEffect]

    /// The machine's idle CPU since the last call, a fraction of all its cores (nil: unknown).
    private let machineIdle: @Sendable () -> Double?

    /// - Parameter machineIdle: read at the end of each window (`MachineIdle.sample` in a run):
    ///   a step back waits for a machine with room (nil, as in tests: the run's own idle decides).
    public init(plan: OverloadPlan, machineIdle: @escaping @Sendable () -> Double? = { nil }) {
        self.plan = plan
        self.machineIdle = machineIdle
        effects = (0...plan.steps.count).map(plan.effect(at:))
        if let pinned { levelValue.store(max(0, min(plan.steps.count, pinned)), ordering: .relaxed) }
    }

    public var level: Int { levelValue.load(ordering: .relaxed) }
    public var effect: OverloadEffect { effects[level] }
    public var maxLevel: Int { state.withLock { $0.maxLevel } }
    public var changes: [(outputTime: Double, change: Change)] { state.withLock { $0.changes } }

    /// One tick: how far behind the live edge it was made (nil: no edge known yet) and how long
    /// the loop waited for the input with nothing left to decode. Returns a change when a window
    /// ends with one.
    public func observe(behind: Double?, idle: Double, now: ContinuousClock.Instant, outputTime: Double) -> Change? {
        if pinned != nil { return nil }
        return state.withLock { s in
            if s.window == nil { s.window = Window(start: now, startOutput: outputTime) }
            if let behind { s.window!.minBehind = min(s.window!.minBehind, behind) }
            s.window!.idle += idle
            let length = s.window!.start.duration(to: now).seconds
            guard length >= plan.window else { return nil }
            let window = s.window!
            s.window = Window(start: now, startOutput: outputTime)
            let machine = machineIdle()
            guard window.minBehind.isFinite else { return nil }
            if let until = s.cooldownUntil, now < until { return nil }
            let level = levelValue.load(ordering: .relaxed)
            var change: Change?
            // Overloaded is slower than needed with work waiting all the time: a window that
            // waited for the input (idle) kept up; one whose output advanced fast enough to be
            // within the limit in eight windows (at least 5 % faster than real time) is catching
            // up. The speed, not the distance to the edge, decides: an input that arrives in a
            // burst (two segments at once) moves the edge, not the machine's capacity.
            let idle = window.idle / length
            let speed = (outputTime - window.startOutput) / length
            let needed = max(0.05, (window.minBehind - plan.behindLimit) / (8 * length))
            let catchingUp = idle >= 0.05 || speed - 1 >= needed
            if window.minBehind > plan.behindLimit, !catchingUp, level < plan.steps.count {
                s.calmWindows = 0
                // One step at a time: two or three at once when losing ground far from the edge
                // (tried) overshot into repeated pictures, three streams on 2 cores repeating
                // 11–18 % of their ticks instead of none, without reaching the edge sooner.
                if let back = s.lastStepBack, back.duration(to: now).seconds < 4 * plan.window {
                    s.calmNeeded = min(24, 2 * s.calmNeeded)
                }
                // Presets cost no picture: a window at less than 0.85× real time takes every
                // preset step left at once (a minute of ultrafast's extra bits, not of repeats).
                var to = level + 1
                if speed < 0.85 {
                    while to < plan.steps.count, plan.steps[to - 1].isPreset, plan.steps[to].isPreset { to += 1 }
                }
                change = Change(from: level, to: to,
                                reason: String(format: "%.1f s or more behind the live edge for %.0f s, working at %.2f× real time",
                                               window.minBehind, length, speed))
                // The next window holds the steps' transition (a preset acts from the next
                // segment): skipped; the one after it judges them.
                s.cooldownUntil = now.advanced(by: .milliseconds(Int64(1.5 * plan.window * 1000)))
            } else if window.minBehind <= plan.behindLimit / 2, idle >= 0.25, (machine ?? 1) >= 0.25 {
                // At the edge with time to spare: one step back after three such windows, or after
                // one when idle half the time (a join's backlog worked off at a deep level) —
                // more after a step back that did not hold. And only on a machine with a quarter
                // of its CPU idle: channels sharing a machine are each idle between their
                // segments, and a step back there takes the others' share (three streams on two
                // cores flapped between presets, behind each time they stepped back together).
                s.calmWindows += 1
                if s.calmWindows >= (idle >= 0.5 ? s.calmNeeded / 3 : s.calmNeeded), level > 0 {
                    s.calmWindows = 0
                    s.lastStepBack = now
                    change = Change(from: level, to: level - 1,
                                    reason: String(format: "at the live edge and idle %.0f%% of the last %.0f s", 100 * idle, length)
                                        + (machine.map { String(format: ", the machine %.0f%% idle", 100 * $0) } ?? ""))
                    s.cooldownUntil = now.advanced(by: .milliseconds(Int64((idle >= 0.5 ? 1 : 2) * plan.window * 1000)))
                }
            } else {
                s.calmWindows = 0
            }
            guard let change else { return nil }
            levelValue.store(change.to, ordering: .relaxed)
            s.maxLevel = max(s.maxLevel, change.to)
            s.changes.append((outputTime, change))
            return change
        }
    }
}

/// What a run shed, for the report.
public struct OverloadSummary: Sendable, Equatable {
    public struct Change: Sendable, Equatable {
        /// Seconds of output when the level changed.
        public var outputTime: Double
        public var level: Int
        /// The steps taken (or given back) at once.
        public var steps: [String]
        public var taken: Bool
        public var reason: String
    }
    public var steps: [String]
    public var maxLevel: Int
    public var finalLevel: Int
    public var changes: [Change]
    /// Pictures the decoder was given and skipped (non-reference, shed).
    public var picturesNotDecoded: Int
    /// Ticks that repeated the last picture instead of a new one, evenly (shed).
    public var ticksShed: Int
    /// Times the encoder was reopened with another preset.
    public var encoderPresetChanges: Int
}

/// The machine's idle CPU from `/proc/stat` (all cores, idle and I/O wait), between two samples.
public final class MachineIdle: Sendable {
    private let last = Mutex<(idle: UInt64, total: UInt64)?>(nil)

    public init() {}

    /// The fraction of the machine's CPU time idle since the previous call; nil on the first call
    /// and where there is no `/proc/stat`. (In a container with a CPU quota the host's idle shows:
    /// then the run's own idle decides, as without it.)
    public func sample() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        // user nice system idle iowait irq softirq steal (guest time is inside user and nice)
        let fields = line.split(separator: " ").dropFirst().prefix(8).compactMap { UInt64($0) }
        guard fields.count >= 5 else { return nil }
        let now = (idle: fields[3] + fields[4], total: fields.reduce(0, +))
        return last.withLock { last in
            defer { last = now }
            guard let before = last, now.total > before.total else { return nil }
            return Double(now.idle &- before.idle) / Double(now.total - before.total)
        }
    }
}
