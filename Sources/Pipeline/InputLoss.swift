import Filters
import Foundation
import MediaIO
import Synchronization

/// A live channel's input losses (`--on-input-loss hold|slate`): when the input went silent past
/// the loss time, and when it came back. The tick loop's input decides both; the tick stage reads
/// `isLost` at each tick (slate, silence) and progress and the report read the record.
final class InputLossRecord: Sendable {
    /// One loss: its start on the wall clock and on the output's timeline, and its length once over.
    struct Loss: Sendable, Codable, Equatable {
        var began: Date
        /// Seconds of output before the loss (where the held picture or the slate starts).
        var outputTime: Double
        /// Nil while the input is still lost.
        var seconds: Double?
    }

    private let state = Mutex<[Loss]>([])

    var losses: [Loss] { state.withLock { $0 } }
    var isLost: Bool { state.withLock { $0.last.map { $0.seconds == nil } ?? false } }

    /// Seconds the input has been lost in all, the current loss included.
    var totalSeconds: Double {
        state.withLock { list in
            list.reduce(0) { $0 + ($1.seconds ?? Date().timeIntervalSince($1.began)) }
        }
    }

    func began(outputTime: Double) {
        state.withLock { $0.append(Loss(began: Date(), outputTime: outputTime, seconds: nil)) }
    }

    /// Ends the current loss; its length in seconds.
    @discardableResult
    func ended() -> Double {
        state.withLock { list in
            guard let last = list.indices.last, list[last].seconds == nil else { return 0 }
            let seconds = Date().timeIntervalSince(list[last].began)
            list[last].seconds = seconds
            return seconds
        }
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
