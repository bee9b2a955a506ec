import Filters
import MediaIO

/// How to turn a stored picture upright, decided once from the stream's display matrix with the
/// rule of ffmpeg 5.1's autorotate (fftools/ffmpeg_filter.c): the angle rounded to a quarter turn
/// within 1°, with the matrix's mirroring kept (transpose `cclock_flip`/`clock_flip`, hflip/vflip);
/// any other angle turns by that many degrees (bilinear, canvas expanded). `run`, `snapshot`,
/// `estimate`, `probe` and the presets all read this one value.
public struct OrientationFix: Sendable, Equatable, CustomStringConvertible {
    /// The exact part: quarter turns clockwise, then an optional mirror.
    public var quarterTurns: Int
    public var mirror: Mirror.Axis?
    /// A non-quarter angle (degrees clockwise), when the matrix has one.
    public var arbitraryDegrees: Double?

    public static let none = OrientationFix(quarterTurns: 0, mirror: nil, arbitraryDegrees: nil)

    public init(quarterTurns: Int, mirror: Mirror.Axis?, arbitraryDegrees: Double?) {
        self.quarterTurns = quarterTurns
        self.mirror = mirror
        self.arbitraryDegrees = arbitraryDegrees
    }

    /// The fix for a stream: its display matrix when it has one, else its rotation tag.
    public init(video: VideoStreamInfo) {
        if let matrix = video.displayMatrix {
            self.init(matrix: matrix)
        } else {
            self.init(clockwiseDegrees: video.rotationClockwise, matrix: nil)
        }
    }

    public init(matrix: DisplayMatrix) {
        self.init(clockwiseDegrees: matrix.rotationClockwise, matrix: matrix.values)
    }

    private init(clockwiseDegrees: Double, matrix m: [Int32]?) {
        // ffmpeg: theta = round(angle), folded into [-0.9, 359.1); quarter turns within 1 degree.
        var theta = clockwiseDegrees.rounded()
        theta -= 360 * (theta / 360 + 0.9 / 360).rounded(.down)
        let c = m?[3] ?? 0, a = m?[0] ?? 65536, d = m?[4] ?? 65536
        self = .none
        if abs(theta - 90) < 1 {
            quarterTurns = 1
            if c > 0 { mirror = .horizontal }       // transpose=cclock_flip: turn, then mirror left-right
        } else if abs(theta - 180) < 1 {
            switch (a < 0, d < 0) {
            case (true, true): quarterTurns = 2   // hflip + vflip is the half turn
            case (true, false): mirror = .horizontal
            case (false, true): mirror = .vertical
            case (false, false): break
            }
        } else if abs(theta - 270) < 1 {
            quarterTurns = 3
            if c < 0 { quarterTurns = 1; mirror = .vertical }   // transpose=clock_flip
        } else if abs(theta) > 1 {
            arbitraryDegrees = clockwiseDegrees
        } else if d < 0 {
            mirror = .vertical
        }
    }

    public var isIdentity: Bool { quarterTurns == 0 && mirror == nil && arbitraryDegrees == nil }

    /// The filters that apply the fix, to run before the user's chain.
    public var filters: [any Filter] {
        if let degrees = arbitraryDegrees { return [Rotate(degrees: degrees)] }
        var result: [any Filter] = []
        if quarterTurns != 0 { result.append(Rotate(quarterTurns: quarterTurns)) }
        if let mirror { result.append(Mirror(axis: mirror)) }
        return result
    }

    /// The upright size of a stored picture of `size`.
    public func outputSize(for size: FrameSize) throws(FilterError) -> FrameSize {
        try FilterChain(filters).outputSize(for: size)
    }

    /// Whole degrees turned, for summaries (0 for a mirror alone).
    public var appliedRotation: Int {
        if let degrees = arbitraryDegrees { return Int(degrees.rounded()) }
        return quarterTurns * 90
    }

    public var description: String {
        if isIdentity { return "none" }
        return filters.map(\.description).joined(separator: " | ")
    }
}
