/// A chain that only moves pixels (mirrors and quarter turns) as one exact move that can run on
/// each plane of a planar picture (Y, Cb, Cr of 4:2:0) — no colour conversion, bit-exact.
/// The pipeline uses it to skip the RGB round trip for orientation fixes.
public struct PlanarMove: Sendable, Equatable {
    let transform: D4Transform

    /// Whether the move leaves the picture as it is.
    public var isIdentity: Bool { transform.isIdentity }

    public func outputSize(for input: FrameSize) -> FrameSize { transform.outputSize(for: input) }

    /// Moves a `size` plane of one-byte samples from `source` (rows `sourceStride` apart) into
    /// `destination` (rows `destinationStride` apart, sized `outputSize(for: size)`).
    public func apply(_ source: UnsafePointer<UInt8>, sourceStride: Int, size: FrameSize,
                      into destination: UnsafeMutablePointer<UInt8>, destinationStride: Int) {
        let t = transform
        let w = size.width, h = size.height
        // Source offset of destination sample (u, v) is origin + u * du + v * dv.
        let origin = (t.flipsX ? w - 1 : 0) + (t.flipsY ? (h - 1) * sourceStride : 0)
        let stepX = t.flipsX ? -1 : 1
        let stepY = t.flipsY ? -sourceStride : sourceStride
        let du = t.transposes ? stepY : stepX
        let dv = t.transposes ? stepX : stepY
        let out = outputSize(for: size)
        let bands = Parallel.bandCount(for: out.height, minimumPerBand: 64)
        // Safe: bands write disjoint destination rows; the source is only read.
        nonisolated(unsafe) let src = source + origin
        nonisolated(unsafe) let dst = destination
        Parallel.forEachBand(of: out.height, bands: bands) { _, rows in
            PlaneKernel.copy(src, du: du, dv: dv, into: dst, stride: destinationStride, width: out.width, rows: rows)
        }
    }
}

enum PlaneKernel {
    /// Destination rows `rows`: whole-row copies when rows stay rows, reversed rows for a horizontal
    /// flip, and 64×64 tiles for transposes (reads stay within a few cache lines per tile).
    static func copy(_ src: UnsafePointer<UInt8>, du: Int, dv: Int, into dst: UnsafeMutablePointer<UInt8>, stride: Int,
                     width: Int, rows: Range<Int>) {
        if du == 1 {
            for v in rows { (dst + v * stride).update(from: src + v * dv, count: width) }
            return
        }
        if du == -1 {
            for v in rows {
                let s = src + v * dv, d = dst + v * stride
                for u in 0..<width { d[u] = s[-u] }
            }
            return
        }
        let tile = 64
        var v0 = rows.lowerBound
        while v0 < rows.upperBound {
            let v1 = min(v0 + tile, rows.upperBound)
            var u0 = 0
            while u0 < width {
                let u1 = min(u0 + tile, width)
                for v in v0..<v1 {
                    let s = src + v * dv, d = dst + v * stride
                    for u in u0..<u1 { d[u] = s[u * du] }
                }
                u0 = u1
            }
            v0 = v1
        }
    }
}

extension FilterChain {
    /// The chain as one planar move when every filter is an exact pixel move for the sizes it
    /// sees (mirrors, quarter turns), else nil. An empty chain is the identity move.
    public func planarMove(for input: FrameSize) -> PlanarMove? {
        var move = D4Transform.identity
        var size = input
        for filter in filters {
            guard let d4 = (filter as? any D4Representable)?.d4Transform(for: size) else { return nil }
            move = move.followed(by: d4)
            size = d4.outputSize(for: size)
        }
        return PlanarMove(transform: move)
    }
}
