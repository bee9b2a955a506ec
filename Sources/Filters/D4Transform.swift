/// One of the eight exact pixel moves of a rectangle (the dihedral group D4): an optional
/// transpose followed by optional flips. Quarter-turn rotations and mirrors are all D4 moves, so
/// any run of them collapses into one pass.
///
/// Destination pixel (u, v) reads source pixel (sx, sy) where (a, b) = transposes ? (v, u) : (u, v),
/// sx = flipsX ? W-1-a : a and sy = flipsY ? H-1-b : b for a W×H source.
struct D4Transform: Hashable, Sendable, CustomStringConvertible {
    var transposes: Bool
    var flipsX: Bool
    var flipsY: Bool

    static let identity = D4Transform(transposes: false, flipsX: false, flipsY: false)
    static let all: [D4Transform] = (0..<8).map {
        D4Transform(transposes: $0 & 4 != 0, flipsX: $0 & 2 != 0, flipsY: $0 & 1 != 0)
    }

    /// `quarterTurns` turns clockwise (negative: counter-clockwise).
    static func rotation(quarterTurns: Int) -> D4Transform {
        switch ((quarterTurns % 4) + 4) % 4 {
        case 1: D4Transform(transposes: true, flipsX: false, flipsY: true)    // transpose=clock
        case 2: D4Transform(transposes: false, flipsX: true, flipsY: true)    // hflip,vflip
        case 3: D4Transform(transposes: true, flipsX: true, flipsY: false)    // transpose=cclock
        default: .identity
        }
    }

    var isIdentity: Bool { self == .identity }

    func outputSize(for input: FrameSize) -> FrameSize { transposes ? input.swapped : input }

    func sourcePixel(u: Int, v: Int, sourceSize: FrameSize) -> (x: Int, y: Int) {
        let (a, b) = transposes ? (v, u) : (u, v)
        return (flipsX ? sourceSize.width - 1 - a : a, flipsY ? sourceSize.height - 1 - b : b)
    }

    /// The single move equal to applying `self` and then `next`.
    func followed(by next: D4Transform) -> D4Transform {
        // Found by checking the eight candidates on a generic (non-square) size: small and obviously right.
        let source = FrameSize(width: 5, height: 3)
        let middle = outputSize(for: source)
        let output = next.outputSize(for: middle)
        return D4Transform.all.first { candidate in
            guard candidate.outputSize(for: source) == output else { return false }
            for v in 0..<output.height {
                for u in 0..<output.width {
                    let m = next.sourcePixel(u: u, v: v, sourceSize: middle)
                    let s = sourcePixel(u: m.x, v: m.y, sourceSize: source)
                    let c = candidate.sourcePixel(u: u, v: v, sourceSize: source)
                    if s != c { return false }
                }
            }
            return true
        }!
    }

    var description: String {
        "D4(transpose: \(transposes), flipX: \(flipsX), flipY: \(flipsY))"
    }
}

/// Filters that are exact D4 moves for a given input size, so the chain can fuse them.
protocol D4Representable {
    func d4Transform(for input: FrameSize) -> D4Transform?
}

/// A run of consecutive mirrors and quarter turns folded into one move while a chain is walked:
/// the one fusion rule `ChainRenderer` and `PlanarChainRenderer` both use.
struct MoveRun {
    var transform: D4Transform
    /// The picture's size before the run.
    var input: FrameSize
    var names: [String]

    var name: String { names.joined(separator: " + ") }
    var outputSize: FrameSize { transform.outputSize(for: input) }

    /// Folds `filter` into `run` when it is an exact move at `size`; the size after it, or nil
    /// when it is not a move (then `run` is unchanged).
    static func fold(_ filter: any Filter, at size: FrameSize, into run: inout MoveRun?) -> FrameSize? {
        guard let d4 = (filter as? any D4Representable)?.d4Transform(for: size) else { return nil }
        if run == nil {
            run = MoveRun(transform: d4, input: size, names: [filter.description])
        } else {
            run!.transform = run!.transform.followed(by: d4)
            run!.names.append(filter.description)
        }
        return d4.outputSize(for: size)
    }
}

/// Renders a D4 move: row copies for flips, cache-blocked tiles for transposes.
final class D4Renderer: FilterRenderer {
    let inputSize: FrameSize
    let outputSize: FrameSize
    let transform: D4Transform
    private let workers: Int

    init(transform: D4Transform, inputSize: FrameSize, workers: Int = Parallel.workerCount) {
        self.transform = transform
        self.inputSize = inputSize
        self.outputSize = transform.outputSize(for: inputSize)
        self.workers = workers
    }

    func render(_ source: RGBImage, into destination: RGBImage) {
        precondition(source.size == inputSize && destination.size == outputSize)
        let t = transform
        let w = inputSize.width, h = inputSize.height
        let stride = source.bytesPerRow
        // Source byte offset of destination pixel (u, v) is origin + u * du + v * dv.
        let origin = (t.flipsX ? 3 * (w - 1) : 0) + (t.flipsY ? (h - 1) * stride : 0)
        let stepX = t.flipsX ? -3 : 3
        let stepY = t.flipsY ? -stride : stride
        let du = t.transposes ? stepY : stepX
        let dv = t.transposes ? stepX : stepY
        let outW = outputSize.width, outH = outputSize.height
        let bands = Parallel.bandCount(for: outH, minimumPerBand: 64, workers: workers)
        let tileU = t.transposes ? 32 : outW
        let tileV = t.transposes ? 32 : 1
        Parallel.forEachBand(of: outH, bands: bands) { _, rows in
            D4Kernel.copy(source: source, origin: origin, du: du, dv: dv, into: destination,
                          rows: rows, tileU: tileU, tileV: tileV)
        }
    }
}

enum D4Kernel {
    /// Writes destination rows `rows`, tile by tile; within a destination row, tiles go left to right
    /// so each 4-byte pixel store's spill into the next pixel is overwritten later.
    static func copy(source: RGBImage, origin: Int, du: Int, dv: Int, into destination: RGBImage,
                     rows: Range<Int>, tileU: Int, tileV: Int) {
        let outW = destination.width
        let src = UnsafePointer(source.baseAddress) + origin
        if du == 3 {
            // Rows are copied whole (identity or vertical flip).
            for v in rows {
                destination.row(v).update(from: src + v * dv, count: 3 * outW)
            }
            return
        }
        var v0 = rows.lowerBound
        while v0 < rows.upperBound {
            let v1 = min(v0 + tileV, rows.upperBound)
            var u0 = 0
            while u0 < outW {
                let u1 = min(u0 + tileU, outW)
                let fastEnd = min(u1, outW - 1)  // the row's last pixel is stored with 3 bytes
                for v in v0..<v1 {
                    let d = destination.row(v)
                    let s = src + v * dv
                    var u = u0
                    while u < fastEnd {
                        (d + 3 * u).copyPixel4(from: s + u * du)
                        u += 1
                    }
                    if u1 == outW {
                        (d + 3 * (outW - 1)).copyPixel3(from: s + (outW - 1) * du)
                    }
                }
                u0 = u1
            }
            v0 = v1
        }
    }
}
