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

    public var mode: Mode
    public var method: Method

    public init(_ mode: Mode, method: Method = .bicubic) {
        self.mode = mode
        self.method = method
    }

    public init(width: Int, height: Int, method: Method = .bicubic) {
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
        if method != .bicubic { text += " method=\(method.rawValue)" }
        return text
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

/// The horizontal taps of a plane resampler, eight outputs at a time: each group of eight reads
/// one span of a reflect-padded row with one dense weight matrix (zero where an output's kernel
/// does not reach). Same kernel, support and normalisation as `ResampleAxis`; only the reflection
/// at the edges moves into the row's padding.
struct WindowAxis: Sendable {
    /// Padding on each side of the row, in samples.
    let margin: Int

    init(source: Int, destination: Int, method: Scale.Method) {
        let scale = Double(source) / Double(destination)
        var windows: [(first: Int, weights: [Double])] = []
        windows.reserveCapacity(destination)
        for i in 0..<destination {
            var first = 0
            var row: [Double] = []
            switch method {
            case .area:
                let lo = Double(i) * scale, hi = Double(i + 1) * scale
                first = Int(lo.rounded(.down))
                var j = first
                while Double(j) < hi, j < source {
                    row.append(max(0, min(hi, Double(j + 1)) - max(lo, Double(j))))
                    j += 1
                }
            case .bilinear, .bicubic:
                let radius = method == .bilinear ? 1.0 : 2.0
                let stretch = max(1, scale)
                let support = radius * stretch
                let center = (Double(i) + 0.5) * scale - 0.5
                first = Int((center - support).rounded(.up))
                var j = first
                while Double(j) <= center + support {
                    let x = abs(Double(j) - center) / stretch
                    row.append(method == .bilinear ? max(0, 1 - x) : ResampleAxis.cubic(x))
                    j += 1
                }
            }
            let total = row.reduce(0, +)
            if row.isEmpty || total == 0 {
                windows.append((min(source - 1, max(0, Int((Double(i) + 0.5) * scale))), [1]))
            } else {
                windows.append((first, row.map { $0 / total }))
            }
        }
        let longest = windows.map(\.weights.count).max() ?? 1
        let taps = (longest + 7) / 8 * 8   // each output's window, in the padded row from starts[o]
        let reach = windows.map { max(-$0.first, $0.first + taps - source) }.max() ?? 0
        let margin = max(0, reach) + 8
        self.margin = margin
        var starts = [Int32](), weights = [Float]()
        for window in windows {
            starts.append(Int32(margin + window.first))
            for k in 0..<taps { weights.append(k < window.weights.count ? Float(window.weights[k]) : 0) }
        }
        // Eight outputs at a time: one dense matrix over the samples their windows span.
        let groups = (destination + 7) / 8
        var span = 1
        for g in 0..<groups {
            let first = Int(starts[8 * g]), last = Int(starts[min(8 * g + 7, destination - 1)])
            span = max(span, last + taps - first)
        }
        groupSpan = span
        // Groups with the same weights (every group, for a ratio like 3:2 away from the edges) share
        // one matrix, so the weights stay in the L1 cache instead of streaming from L2.
        var groupStarts = [Int32](), groupMatrices = [Int32](), groupWeights = [Float]()
        var known: [[Float]: Int32] = [:]
        for g in 0..<groups {
            let base = Int(starts[8 * g])
            groupStarts.append(Int32(base))
            var matrix = [Float](repeating: 0, count: span * 8)
            for lane in 0..<8 where 8 * g + lane < destination {
                let o = 8 * g + lane
                for k in 0..<taps {
                    matrix[(Int(starts[o]) - base + k) * 8 + lane] = weights[o * taps + k]
                }
            }
            if let offset = known[matrix] {
                groupMatrices.append(offset)
            } else {
                let offset = Int32(groupWeights.count)
                known[matrix] = offset
                groupMatrices.append(offset)
                groupWeights += matrix
            }
        }
        self.groupStarts = groupStarts
        self.groupMatrices = groupMatrices
        self.groupWeights = groupWeights
    }

    /// Samples spanned by the windows of eight consecutive outputs (the widest group's).
    let groupSpan: Int
    /// Group g's first sample in the padded row.
    let groupStarts: [Int32]
    /// Group g's weight matrix: sample u's eight weights at `groupMatrices[g] + 8u`.
    let groupMatrices: [Int32]
    let groupWeights: [Float]
}

/// Resizes one plane: per output row, the vertical taps into a float row (16 samples a vector),
/// its edges reflected into padding, then each output sample one window × weights dot product.
final class PlaneScaleRenderer: PlaneRenderer {
    let inputSize: FrameSize
    let outputSize: FrameSize
    private let horizontal: WindowAxis
    private let vertical: ResampleAxis
    /// Per band: the padded line, then a ring of source rows as floats (each converted once).
    private let rows: [ScratchBuffer<Float>]
    /// Per band: which source row each ring slot holds (−1: none).
    private let ringTags: [ScratchBuffer<Int>]
    private let ringRows: Int
    private let ringStride: Int
    private let workers: Int

    init(method: Scale.Method, inputSize: FrameSize, outputSize: FrameSize, workers: Int = Parallel.workerCount) {
        self.inputSize = inputSize
        self.outputSize = outputSize
        self.workers = workers
        horizontal = WindowAxis(source: inputSize.width, destination: outputSize.width, method: method)
        vertical = ResampleAxis(source: inputSize.height, destination: outputSize.height, method: method)
        let length = inputSize.width + 2 * horizontal.margin + 32
        ringRows = vertical.taps + 1
        ringStride = (inputSize.width + 15) / 16 * 16 + 16
        rows = (0..<workers).map { [ringRows, ringStride] _ in ScratchBuffer(count: length + ringRows * ringStride, zero: 0) }
        ringTags = (0..<workers).map { [ringRows] _ in ScratchBuffer(count: ringRows, zero: -1) }
    }

    func render(_ source: Plane, into destination: Plane) {
        if inputSize == outputSize {
            for y in 0..<inputSize.height { destination.row(y).update(from: source.row(y), count: inputSize.width) }
            return
        }
        let horizontal = horizontal, vertical = vertical, rows = rows, tags = ringTags
        let ring = (rows: ringRows, stride: ringStride, line: inputSize.width + 2 * horizontal.margin + 32)
        let bands = Parallel.bandCount(for: outputSize.height, minimumPerBand: 16, workers: workers)
        Parallel.forEachBand(of: outputSize.height, bands: bands) { band, range in
            let tag = tags[band].base
            for slot in 0..<ring.rows { tag[slot] = -1 }   // the source changed since the last frame
            PlaneScaleKernel.rows(range, source: source, destination: destination, horizontal: horizontal, vertical: vertical,
                                  row: rows[band].base, ring: rows[band].base + ring.line, ringStride: ring.stride, ringRows: ring.rows,
                                  tags: tag)
        }
    }
}

enum PlaneScaleKernel {
    static func rows(_ range: Range<Int>, source: Plane, destination: Plane, horizontal: WindowAxis, vertical: ResampleAxis,
                     row: UnsafeMutablePointer<Float>, ring: UnsafeMutablePointer<Float>, ringStride: Int, ringRows: Int,
                     tags: UnsafeMutablePointer<Int>) {
        let w = source.width, outW = destination.width
        let margin = horizontal.margin
        let line = row + margin
        vertical.indices.withUnsafeBufferPointer { vIndex in
        vertical.weights.withUnsafeBufferPointer { vWeight in
        horizontal.groupStarts.withUnsafeBufferPointer { groupStarts in
        horizontal.groupWeights.withUnsafeBufferPointer { groupWeights in
        horizontal.groupMatrices.withUnsafeBufferPointer { groupMatrices in
            let vTaps = vertical.taps
            /// Source row r as floats, from the ring (converted on first use; a tap window's rows
            /// are distinct modulo the ring's size).
            func floatRow(_ r: Int) -> UnsafePointer<Float> {
                let slot = r % ringRows
                let p = ring + slot * ringStride
                if tags[slot] != r {
                    let s = source.row(r)
                    var i = 0
                    while i + 16 <= w { store16(floats16(s + i), p + i); i += 16 }
                    while i < w { p[i] = Float(s[i]); i += 1 }
                    tags[slot] = r
                }
                return UnsafePointer(p)
            }
            withUnsafeTemporaryAllocation(of: UnsafePointer<Float>.self, capacity: vTaps) { pointers in
            let rowsOf = pointers.baseAddress!
            for y in range {
                // Vertical: line = Σ w_k · source row k.
                for k in 0..<vTaps { rowsOf[k] = floatRow(Int(vIndex[y * vTaps + k])) }
                let weightsOf = vWeight.baseAddress! + y * vTaps
                var i = 0
                while i < w {
                    var acc = weightsOf[0] * load16(rowsOf[0] + i)
                    for k in 1..<vTaps { acc += weightsOf[k] * load16(rowsOf[k] + i) }
                    store16(acc, line + i)
                    i += 16
                }
                // Reflect about the edge samples into the padding (…, 2, 1, 0, 1, 2, …).
                for m in 1...margin {
                    line[-m] = line[ResampleAxis.reflect(-m, w)]
                    line[w - 1 + m] = line[ResampleAxis.reflect(w - 1 + m, w)]
                }
                // Horizontal: eight outputs at a time, each sample of their common span broadcast
                // and multiplied by its column of eight weights (zero outside an output's window).
                let out = destination.row(y)
                let span = horizontal.groupSpan
                var x = 0, group = 0
                while x < outW {
                    let p = UnsafePointer(row + Int(groupStarts[group]))
                    let wp = groupWeights.baseAddress! + Int(groupMatrices[group])
                    // Four independent sums (fused multiply-adds) keep the adder's latency hidden.
                    var acc0 = SIMD8<Float>(), acc1 = SIMD8<Float>(), acc2 = SIMD8<Float>(), acc3 = SIMD8<Float>()
                    var u = 0
                    while u + 4 <= span {
                        acc0.addProduct(SIMD8(repeating: p[u]), load8(wp + 8 * u))
                        acc1.addProduct(SIMD8(repeating: p[u + 1]), load8(wp + 8 * u + 8))
                        acc2.addProduct(SIMD8(repeating: p[u + 2]), load8(wp + 8 * u + 16))
                        acc3.addProduct(SIMD8(repeating: p[u + 3]), load8(wp + 8 * u + 24))
                        u += 4
                    }
                    while u < span {
                        acc0.addProduct(SIMD8(repeating: p[u]), load8(wp + 8 * u))
                        u += 1
                    }
                    storeBytes8((acc0 + acc1) + (acc2 + acc3), to: out + x, count: min(8, outW - x))
                    x += 8
                    group += 1
                }
            }
            }
        }}}}}
    }
}
