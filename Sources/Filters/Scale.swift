/// Resizes the picture.
///
/// Sizes: `.exact(W×H)`; `.fit(W×H)` — the largest size inside the box with the input's aspect
/// (may upscale); `.width(W)` / `.height(H)` — the other side follows the aspect; `.max(N)` — the
/// longest side becomes at most N, never upscaling. A computed side is the exact real value
/// rounded to the nearest integer (halves away from zero), never below 1; no rounding to even
/// sizes happens here (encoder alignment is the encoder's business).
///
/// Methods follow libswscale: `.bilinear` (tent), `.bicubic` (Keys cubic, B = 0, C = 0.6, the
/// swscale default) and `.area` (box average of the covered source area). For downscaling, the
/// kernel's support widens by the scale factor, so large reductions do not alias.
public struct Scale: Filter, Hashable {
    public enum Mode: Hashable, Sendable {
        case exact(FrameSize)
        case fit(FrameSize)
        case width(Int)
        case height(Int)
        case max(Int)
    }

    public enum Method: String, CaseIterable, Sendable {
        case bilinear, bicubic, area
    }

    public enum Parameters {
        public static let method = ValueParameter<Method>.choice("method", default: .bicubic,
                                                                  summary: "resampling kernel (support widens on downscale)")
    }

    public var mode: Mode
    public var method: Method

    public init(_ mode: Mode, method: Method = Parameters.method.defaultValue) {
        self.mode = mode
        self.method = method
    }

    public init(width: Int, height: Int, method: Method = Parameters.method.defaultValue) {
        self.init(.exact(FrameSize(width: width, height: height)), method: method)
    }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        func rounded(_ value: Double) -> Int { Swift.max(1, Int(value.rounded(.toNearestOrAwayFromZero))) }
        func positive(_ values: Int...) throws(FilterError) {
            guard values.allSatisfy({ $0 > 0 }) else {
                throw .invalidGeometry(filter: description, reason: "sizes must be positive")
            }
        }
        let w = Double(input.width), h = Double(input.height)
        switch mode {
        case let .exact(size):
            try positive(size.width, size.height)
            return size
        case let .fit(box):
            try positive(box.width, box.height)
            let factor = Swift.min(Double(box.width) / w, Double(box.height) / h)
            return FrameSize(width: Swift.min(box.width, rounded(w * factor)),
                             height: Swift.min(box.height, rounded(h * factor)))
        case let .width(width):
            try positive(width)
            return FrameSize(width: width, height: rounded(h * Double(width) / w))
        case let .height(height):
            try positive(height)
            return FrameSize(width: rounded(w * Double(height) / h), height: height)
        case let .max(longest):
            try positive(longest)
            guard Swift.max(input.width, input.height) > longest else { return input }
            if input.width >= input.height {
                return FrameSize(width: longest, height: rounded(h * Double(longest) / w))
            }
            return FrameSize(width: rounded(w * Double(longest) / h), height: longest)
        }
    }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        ScaleRenderer(method: method, inputSize: input, outputSize: try outputSize(for: input))
    }

    public var description: String {
        var text = switch mode {
        case let .exact(size): "scale \(size)"
        case let .fit(size): "scale fit=\(size)"
        case let .width(width): "scale width=\(width)"
        case let .height(height): "scale height=\(height)"
        case let .max(longest): "scale max=\(longest)"
        }
        if let method = Parameters.method.argument(method) { text += " " + method }
        return text
    }
}

extension Scale: PlanarFilter {
    /// Not for a downscale so strong that 16-bit weights lose the kernel's shape (`PlaneScaler.isPrecise`).
    public func acceptsPlanes(of picture: FrameSize) -> Bool {
        guard let output = try? outputSize(for: picture) else { return false }
        return [0, 1].allSatisfy {
            PlaneScaler.isPrecise(method: method, inputSize: picture.shifted(by: $0), outputSize: output.shifted(by: $0))
        }
    }

    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        guard let output = try? outputSize(for: picture) else { return nil }
        return PlaneScaler(method: method, inputSize: picture.shifted(by: role.shift), outputSize: output.shifted(by: role.shift))
    }
}

/// Per-output taps of a 1-D resampler: output i reads `indices[i*taps ..< (i+1)*taps]` with `weights`.
struct ResampleAxis: Sendable {
    let taps: Int
    let indices: [Int32]
    let weights: [Float]

    /// Weights for `source` → `destination` samples, pixel centres aligned
    /// (source position of output i is (i + ½)·s − ½ with s = source / destination).
    /// Taps past an edge reflect about the edge pixel (…, 2, 1, 0, 1, 2, …), which keeps fine
    /// periodic patterns (a 1-pixel checkerboard) unbiased at the borders.
    init(source: Int, destination: Int, method: Scale.Method) {
        let scale = Double(source) / Double(destination)
        var rows: [[(Int, Double)]] = []
        rows.reserveCapacity(destination)
        for i in 0..<destination {
            var row: [(Int, Double)] = []
            switch method {
            case .area:
                // Box: the share of each source pixel covered by the output pixel's footprint.
                let lo = Double(i) * scale, hi = Double(i + 1) * scale
                var j = Int(lo.rounded(.down))
                while Double(j) < hi, j < source {
                    let overlap = min(hi, Double(j + 1)) - max(lo, Double(j))
                    if overlap > 1e-12 { row.append((j, overlap)) }
                    j += 1
                }
            case .bilinear, .bicubic:
                let radius = method == .bilinear ? 1.0 : 2.0
                let stretch = max(1, scale)
                let support = radius * stretch
                let center = (Double(i) + 0.5) * scale - 0.5
                var j = Int((center - support).rounded(.up))
                while Double(j) <= center + support {
                    let x = abs(Double(j) - center) / stretch
                    let weight = method == .bilinear ? max(0, 1 - x) : Self.cubic(x)
                    if weight != 0 { row.append((Self.reflect(j, source), weight)) }
                    j += 1
                }
            }
            if row.isEmpty { row = [(min(source - 1, max(0, Int((Double(i) + 0.5) * scale))), 1)] }
            let total = row.reduce(0) { $0 + $1.1 }
            rows.append(row.map { ($0.0, $0.1 / total) })
        }
        let taps = rows.map(\.count).max() ?? 1
        var indices = [Int32](), weights = [Float]()
        indices.reserveCapacity(taps * destination)
        weights.reserveCapacity(taps * destination)
        for row in rows {
            for k in 0..<taps {
                indices.append(Int32(k < row.count ? row[k].0 : row[row.count - 1].0))
                weights.append(k < row.count ? Float(row[k].1) : 0)
            }
        }
        self.taps = taps
        self.indices = indices
        self.weights = weights
    }

    /// Keys cubic with a = −0.6 (Mitchell–Netravali B = 0, C = 0.6, libswscale's default).
    static func cubic(_ x: Double) -> Double {
        let a = -0.6
        if x < 1 { return ((a + 2) * x - (a + 3)) * x * x + 1 }
        if x < 2 { return a * (((x - 5) * x + 8) * x - 4) }
        return 0
    }

    /// Whole-sample symmetric reflection into 0..<count.
    static func reflect(_ j: Int, _ count: Int) -> Int {
        guard count > 1 else { return 0 }
        let period = 2 * (count - 1)
        var k = j % period
        if k < 0 { k += period }
        return k < count ? k : period - k
    }
}

/// Separable resampler: for each output row, a vertical pass over the needed source rows into a
/// float row (vectorised across the row, in cache-sized column blocks), then a horizontal pass
/// per output pixel (R, G, B in one vector). Output rows are split across cores.
final class ScaleRenderer: FilterRenderer {
    let inputSize: FrameSize
    let outputSize: FrameSize
    private let horizontal: ResampleAxis
    private let vertical: ResampleAxis
    private let rows: [ScratchBuffer<Float>]
    private let workers: Int

    init(method: Scale.Method, inputSize: FrameSize, outputSize: FrameSize, workers: Int = Parallel.workerCount) {
        self.inputSize = inputSize
        self.outputSize = outputSize
        self.workers = workers
        horizontal = ResampleAxis(source: inputSize.width, destination: outputSize.width, method: method)
        vertical = ResampleAxis(source: inputSize.height, destination: outputSize.height, method: method)
        rows = (0..<workers).map { _ in ScratchBuffer(count: 3 * inputSize.width + 16, zero: 0) }
    }

    func render(_ source: RGBImage, into destination: RGBImage) {
        if inputSize == outputSize {
            destination.copyPixels(from: source)
            return
        }
        let horizontal = horizontal, vertical = vertical, rows = rows
        let bands = Parallel.bandCount(for: outputSize.height, minimumPerBand: 16, workers: workers)
        Parallel.forEachBand(of: outputSize.height, bands: bands) { band, range in
            ScaleKernel.rows(range, source: source, destination: destination,
                             horizontal: horizontal, vertical: vertical, row: rows[band].base)
        }
    }
}

enum ScaleKernel {
    static func rows(_ range: Range<Int>, source: RGBImage, destination: RGBImage,
                     horizontal: ResampleAxis, vertical: ResampleAxis, row: UnsafeMutablePointer<Float>) {
        let samples = 3 * source.width
        let outW = destination.width
        vertical.indices.withUnsafeBufferPointer { vIndex in
        vertical.weights.withUnsafeBufferPointer { vWeight in
        horizontal.indices.withUnsafeBufferPointer { hIndex in
        horizontal.weights.withUnsafeBufferPointer { hWeight in
            let vTaps = vertical.taps, hTaps = horizontal.taps
            for y in range {
                // Vertical: row = Σ w_k · source row k, in blocks that stay in L1.
                let block = 2048
                var start = 0
                while start < samples {
                    let end = min(start + block, samples)
                    let first = UnsafePointer(source.row(Int(vIndex[y * vTaps]))), w0 = vWeight[y * vTaps]
                    for i in start..<end { row[i] = w0 * Float(first[i]) }
                    for k in 1..<vTaps {
                        let w = vWeight[y * vTaps + k]
                        if w == 0 { continue }
                        let p = UnsafePointer(source.row(Int(vIndex[y * vTaps + k])))
                        for i in start..<end { row[i] += w * Float(p[i]) }
                    }
                    start = end
                }
                // Horizontal: one vector of (R, G, B, ·) per output pixel.
                let out = destination.row(y)
                for x in 0..<outW {
                    var sum = SIMD4<Float>()
                    let base = x * hTaps
                    for k in 0..<hTaps {
                        let p = row + 3 * Int(hIndex[base + k])
                        sum += hWeight[base + k] * UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Float>.self)
                    }
                    let packed = packPixel(sum)
                    if x < outW - 1 {
                        UnsafeMutableRawPointer(out + 3 * x).storeBytes(of: packed, as: UInt32.self)
                    } else {
                        out[3 * x] = UInt8(truncatingIfNeeded: packed)
                        out[3 * x + 1] = UInt8(truncatingIfNeeded: packed >> 8)
                        out[3 * x + 2] = UInt8(truncatingIfNeeded: packed >> 16)
                    }
                }
            }
        }}}}
    }

    /// Rounds R, G, B to 0...255 and packs them little-endian into the low three bytes.
    @inline(__always)
    static func packPixel(_ value: SIMD4<Float>) -> UInt32 {
        var clamped = value.replacing(with: 0, where: value .< 0)
        clamped.replace(with: 255, where: clamped .> 255)
        let bits = unsafeBitCast(clamped + 12_582_912, to: SIMD4<UInt32>.self) & 0xFF
        return bits[0] | bits[1] << 8 | bits[2] << 16
    }
}
