import Filters
import MediaIO

/// The chain's RGB picture as one rendition's encoder input: scaled to the rendition's size when
/// it differs by more than the odd-pixel crop, then converted to 4:2:0 (or copied, for PNG).
final class RenditionConverter {
    private let toYUV: RGBToFrame?
    private let scaler: (any FilterRenderer)?
    private let scaled: RGBImage?
    private let timing: TimingRecorder

    init(size: FrameSize, chainOutputSize: FrameSize, rgbEncoder: Bool, color: ColorDescription,
         timing: TimingRecorder) throws(MediaError) {
        self.timing = timing
        toYUV = rgbEncoder ? nil : try RGBToFrame(size: size, color: color)
        if abs(chainOutputSize.width - size.width) > 1 || abs(chainOutputSize.height - size.height) > 1 {
            do {
                let renderer = try Scale(width: size.width, height: size.height).makeRenderer(for: chainOutputSize)
                scaler = renderer
                scaled = RGBImage(size: renderer.outputSize)
            } catch {
                throw .invalidSettings("cannot scale \(chainOutputSize) to \(size): \(error)")
            }
        } else {
            scaler = nil
            scaled = nil
        }
    }

    func convert(_ image: RGBImage) throws(MediaError) -> Frame {
        var source = image
        if let scaler, let scaled {
            timing.measure(.filter) { scaler.render(image, into: scaled) }
            source = scaled
        }
        guard let toYUV else { return try Frame(copying: source) }
        return try timing.measure(.toYUV) { () throws(MediaError) in try toYUV.convert(source) }
    }
}
