/// A video filter on packed RGB frames.
///
/// Geometry comes before frames: `outputSize(for:)` is pure, so a chain can size every buffer and
/// configure the encoder once, and a bad chain fails at start-up rather than at frame 1.
public protocol Filter: Sendable, CustomStringConvertible {
    /// The size this filter produces from an input of `input`; throws when it cannot apply.
    func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize

    /// A renderer for one stream of frames of size `input`, holding any scratch memory it needs,
    /// allocated here once rather than per frame.
    func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer
}

/// Applies one filter to frames of a fixed input size. Not shared between threads at once.
public protocol FilterRenderer: AnyObject {
    var inputSize: FrameSize { get }
    var outputSize: FrameSize { get }
    /// Writes the filtered `source` into `destination` (sized `outputSize`); they never alias.
    func render(_ source: RGBImage, into destination: RGBImage)
}

/// Why a filter or chain cannot be used; the message names the problem and what to do.
public enum FilterError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The filter's parameters are invalid for this input (e.g. a crop outside the frame).
    case invalidGeometry(filter: String, reason: String)

    public var description: String {
        switch self {
        case let .invalidGeometry(filter, reason): "\(filter): \(reason)"
        }
    }
}
