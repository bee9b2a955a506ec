import Foundation

/// A stream's display matrix (ISO/IEC 14496-12 `tkhd` matrix, FFmpeg's AV_PKT_DATA_DISPLAYMATRIX):
/// nine values, row-major; the 2x2 part is 16.16 fixed point. It says how to turn (and mirror)
/// the stored picture for display. A value, so orientation is decided from it without FFmpeg.
public struct DisplayMatrix: Sendable, Equatable, CustomStringConvertible {
    public var values: [Int32]

    public init(_ values: [Int32]) {
        precondition(values.count == 9, "a display matrix has nine values")
        self.values = values
    }

    /// The matrix of a display rotation of `degrees` clockwise (so `rotationClockwise == degrees`);
    /// `mirrored` negates its first column, as `av_display_matrix_flip(m, 1, 0)` does.
    public static func rotation(clockwise degrees: Double, mirrored: Bool = false) -> DisplayMatrix {
        // Row-major [a b; c d]: a display rotation of θ clockwise has b = sin θ, a = d = cos θ, c = −sin θ.
        let r = degrees * .pi / 180
        func fixed(_ v: Double) -> Int32 { Int32((v * 65536).rounded()) }
        let flip: Double = mirrored ? -1 : 1
        return DisplayMatrix([fixed(cos(r) * flip), fixed(sin(r)), 0,
                              fixed(-sin(r) * flip), fixed(cos(r)), 0,
                              0, 0, 1 << 30])
    }

    /// The rotation in degrees clockwise, as `-av_display_rotation_get` computes it (NaN-free:
    /// a degenerate matrix is 0). A mirrored matrix still has a rotation; see `isMirrored`.
    public var rotationClockwise: Double {
        let a = Double(values[0]) / 65536, b = Double(values[1]) / 65536
        let c = Double(values[3]) / 65536, d = Double(values[4]) / 65536
        let scaleX = hypot(a, c), scaleY = hypot(b, d)
        guard scaleX > 0, scaleY > 0 else { return 0 }
        let degrees = atan2(b / scaleY, a / scaleX) * 180 / .pi
        return degrees == 0 ? 0 : degrees
    }

    /// Whether the matrix mirrors the picture (negative determinant).
    public var isMirrored: Bool {
        Int64(values[0]) * Int64(values[4]) - Int64(values[1]) * Int64(values[3]) < 0
    }

    public var description: String { "[" + values.map(String.init).joined(separator: " ") + "]" }
}
