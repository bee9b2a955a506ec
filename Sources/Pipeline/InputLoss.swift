import Filters
import Foundation
import MediaIO
import Synchronization

/// A live channel's input as far as loss goes (`--on-input-loss hold|slate`): the one owner of its
/// state and its record. Live → lost (silent past the plan's loss time, with nothing left to
/// decode) → resuming (a frame is back; the ticks until the tick loop shows it, a resume delay
/// later, still show the loss's picture) → live (the returning input's first picture shown).
/// The tick loop's input consults it (a frame while lost is a `.resume`), the tick stage asks it
/// what each tick shows (the held picture or the slate, and silence), and progress and the report
/// read its record.
public final class InputLossState: Sendable {
    public enum Phase: Sendable, Equatable {
        case live
        case lost
        /// Back, its first picture not yet shown.
        case resuming
    }

    /// One loss: its start on the wall clock and on the output's timeline, and its length once over.
    public struct Loss: Sendable, Codable, Equatable {
        public var began: Date
        /// Seconds of output before the loss (where the held picture or the slate starts).
        public var outputTime: Double
        /// Nil while the input is still lost.
        public var seconds: Double?
    }

    private struct State {
        var phase = Phase.live
        var losses: [Loss] = []
    }
    private let state = Mutex(State())

    public init() {}

    public var phase: Phase { state.withLock { $0.phase } }
    public var losses: [Loss] { state.withLock { $0.losses } }
    /// Silent now: no frame since the loss began.
    public var isLost: Bool { phase == .lost }
    /// A tick that shows no new picture shows the loss's (the held picture or the slate) and
    /// silence: lost, or back but its first picture not yet shown.
    public var showsLossPicture: Bool { phase != .live }

    /// Seconds the input has been lost in all, the current loss included.
    public var totalSeconds: Double {
        state.withLock { s in
            s.losses.reduce(0) { $0 + ($1.seconds ?? Date().timeIntervalSince($1.began)) }
        }
    }

    /// Live → lost: the input's silence passed the loss time, `outputTime` seconds into the output.
    public func began(outputTime: Double) {
        state.withLock { s in
            s.phase = .lost
            s.losses.append(Loss(began: Date(), outputTime: outputTime, seconds: nil))
        }
    }

    /// Lost → resuming: a frame is back. The loss's length in seconds.
    @discardableResult
    public func ended() -> Double {
        state.withLock { s in
            guard s.phase == .lost, let last = s.losses.indices.last, s.losses[last].seconds == nil else { return 0 }
            s.phase = .resuming
            let seconds = Date().timeIntervalSince(s.losses[last].began)
            s.losses[last].seconds = seconds
            return seconds
        }
    }

    /// A tick showed a new picture: the returning input's first (resuming → live).
    public func newPictureShown() {
        state.withLock { s in if s.phase == .resuming { s.phase = .live } }
    }
}


/// The pictures the decode stage left out to shed load (`DecodedEvent.leftOut`), as the tick
/// stage's input took them off the channel: the latest 32. Read and written on the tick task only.
final class ShedPictures {
    private var times: [Int64] = []

    func record(_ time: Int64) {
        times.append(time)
        if times.count > 32 { times.removeFirst(times.count - 32) }
    }

    /// Whether the picture after `frame` (within two of its durations) was left out: a tick that
    /// holds `frame` then repeats it by the overload's choice, not for a stalled input.
    func leftOut(after frame: TimedFrame) -> Bool {
        let start = frame.relativePts, end = frame.relativePts + 2 * max(1, frame.duration)
        return times.contains { $0 > start && $0 <= end }
    }
}

/// `--on-input-loss slate=FILE`: the PNG scaled to fit an output's picture, centred on black, as a
/// frame of that size (yuv420p) for its encoder: shown as it is, not through the chain.
enum Slate {
    static func frame(path: String, size: FrameSize, color: ColorDescription) throws(MediaError) -> Frame {
        let png: RGBAImage
        do { png = try RGBAImage.png(path: path) } catch {
            throw .invalidSettings("--on-input-loss slate=\(path): \(error.reason)")
        }
        guard png.width > 0, png.height > 0 else { throw .invalidSettings("--on-input-loss slate=\(path): the picture is empty") }
        // Alpha over black: a slate with transparency shows black where it is clear.
        let rgb = RGBImage(width: png.width, height: png.height)
        for y in 0..<png.height {
            let row = rgb.row(y)
            for x in 0..<png.width {
                let p = (y * png.width + x) * 4
                let a = UInt16(png.pixels[p + 3])
                for c in 0..<3 { row[x * 3 + c] = UInt8((UInt16(png.pixels[p + c]) * a + 127) / 255) }
            }
        }
        let chain = FilterChain([Scale(fit: size, method: .area), Pad(width: size.width, height: size.height)])
        do {
            let renderer = try ChainRenderer(chain: chain, inputSize: FrameSize(width: png.width, height: png.height))
            let fitted = renderer.render(rgb)
            return try RGBToFrame(size: size, color: color).convert(fitted)
        } catch let error as FilterError {
            throw .invalidSettings("--on-input-loss slate=\(path): \(error)")
        } catch let error as MediaError {
            throw error
        } catch {
            throw .invalidSettings("--on-input-loss slate=\(path): \(error)")
        }
    }
}
