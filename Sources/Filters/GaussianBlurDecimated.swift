// Large-sigma Gaussian blur by decimation: average f×f blocks, blur the small picture with a short
// FIR, interpolate back linearly. The blurred signal is band-limited far below the small
// picture's Nyquist frequency, so little is lost, and the cost per pixel no longer depends on sigma.
//
// Variances add: the f-box prefilter contributes (f² − 1)/12, linear interpolation by f another
// (f² − 1)/6, so the small picture is blurred with σₗ = √(σ² − (f² − 1)/4) / f.
//
// Clamp-to-edge stays exact: the picture is conceptually extended by repeating its edge pixels, and
// the small picture's padding is what that extension decimates to (the block means of the edge
// row or column), not a repeat of the small picture's own edge blocks.

/// Factor, small-picture sigma and taps for a decimated blur, or nil when plain FIR is better.
struct DecimationPlan: Sendable, Hashable {
    /// Smallest sigma the small picture may be blurred with. Below it, linear interpolation's
    /// imaging and the box's aliasing stop being negligible. Measured against the exact Gaussian on
    /// `SyntheticImage.natural` 1280×720 (`livefilter-bench --blur-quality`): halving (f = 2) stays
    /// ≥ 54 dB down to σₗ = 0.9 (σ = 2); larger boxes alias more and need σₗ ≥ 1.4 for ≥ 50 dB
    /// (at σₗ ≈ 0.8 and f = 32 it falls to 45.6 dB).
    static func minimumLowSigma(factor: Int) -> Double { factor == 2 ? 0.9 : 1.4 }

    let factor: Int
    let lowSigma: Double

    init?(sigma: Double) {
        var chosen: (Int, Double)?
        var f = 2
        while f <= 64 {
            let variance = sigma * sigma - Double(f * f - 1) / 4
            guard variance > 0 else { break }
            let low = variance.squareRoot() / Double(f)
            if low < Self.minimumLowSigma(factor: f) { break }
            chosen = (f, low)
            f *= 2
        }
        guard let chosen else { return nil }
        factor = chosen.0
        lowSigma = chosen.1
    }
}

/// Scratch and geometry for one region size; all planes are float samples (`channels` per pixel,
/// 3 for RGB, 1 for a Y′CbCr plane), rows `stride` floats apart.
final class DecimatedBlur: @unchecked Sendable {
    let factor: Int
    let channels: Int
    let taps: [Float]
    let width: Int, height: Int           // full-resolution region
    /// The picture made: the region's size, or a scale's output (blur and resize in one pass).
    let outputWidth: Int, outputHeight: Int
    let lowWidth: Int, lowHeight: Int     // ⌈w/f⌉ × ⌈h/f⌉
    let pad: Int                          // low-res padding on each side (radius + 1)
    let paddedWidth: Int, paddedHeight: Int
    let stride: Int
    /// Block means (with their edge padding), horizontally blurred: all padded rows, columns
    /// −1…lowWidth. The only full low-resolution plane; the block means and the vertical pass
    /// live in one low-res row per band, so they never leave the cache.
    private let across: ScratchBuffer<Float>
    /// Per worker: an accumulator row and two interpolated rows, each 3w + 16 floats, then one
    /// low-resolution row of `stride` floats.
    private let rowScratch: [ScratchBuffer<Float>]
    private let rowFloats: Int
    /// Horizontal interpolation: for output pixel x, the float offset of the left sample in a
    /// blurred row and the weight of the right one.
    private let leftOffset: [Int32]
    private let rightWeight: [Float]
    private let workers: Int

    /// `output` other than the region's size interpolates the blurred small picture straight onto
    /// the resized grid (pixel centres aligned, as `Scale`), so the full-size blur is never made.
    init(plan: DecimationPlan, width: Int, height: Int, output: FrameSize? = nil, channels: Int = 3, workers: Int) {
        factor = plan.factor
        outputWidth = output?.width ?? width
        outputHeight = output?.height ?? height
        self.channels = channels
        // Radius 3σₗ: the small picture's FIR is the remaining cost, and 4σₗ measured no better (PSNR
        // identical to 0.1 dB at σ 2…100).
        taps = gaussianTaps(sigma: plan.lowSigma, radiusFactor: 3)
        self.width = width
        self.height = height
        self.workers = workers
        lowWidth = (width + factor - 1) / factor
        lowHeight = (height + factor - 1) / factor
        pad = taps.count  // radius + 1
        paddedWidth = lowWidth + 2 * pad
        paddedHeight = lowHeight + 2 * pad
        stride = (channels * paddedWidth + 15) / 16 * 16 + 16
        across = ScratchBuffer(count: stride * paddedHeight + 16, zero: 0)
        let rowFloats = (channels * max(width, outputWidth) + 15) / 16 * 16 + 16
        self.rowFloats = rowFloats
        let stride = stride
        rowScratch = (0..<workers).map { _ in ScratchBuffer(count: 3 * rowFloats + stride + 16, zero: 0) }
        let f = Double(factor)
        var offsets: [Int32] = [], weights: [Float] = []
        let across = Double(width) / Double(outputWidth)
        for x in 0..<outputWidth {
            let t = ((Double(x) + 0.5) * across - 0.5 - (f - 1) / 2) / f
            let i0 = min(max(Int(t.rounded(.down)), -1), lowWidth - 1)   // −1…lowWidth−1
            offsets.append(Int32(channels * (i0 + 1)))
            weights.append(Float(min(max(t - Double(i0), 0), 1)))
        }
        leftOffset = offsets
        rightWeight = weights
    }

    func render(_ input: PixelRegion, _ output: PixelRegion) {
        let f = factor, w = width, h = height, c = channels
        let lw = lowWidth, lh = lowHeight, pad = pad
        let stride = stride
        let across = FloatPlane(base: across.base, stride: stride)
        let rowScratch = rowScratch, rowFloats = rowFloats
        let taps = taps
        let outSamples = c * (lw + 2)
        let paddedHeight = paddedHeight

        // 1+2. Per padded low-res row: block means with left/right padding (the means of the edge
        // column over the block), then the horizontal FIR for columns −1…lw. Rows above and below
        // are the block means of the first and last source rows (clamp-to-edge, decimated).
        let bands = Parallel.bandCount(for: paddedHeight, minimumPerBand: max(2, 32 / f), workers: workers)
        Parallel.forEachBand(of: paddedHeight, bands: bands) { band, rows in
            let acc = rowScratch[band].base
            let low = acc + 3 * rowFloats
            for r in rows {
                if r < pad || r >= pad + lh {
                    let y = r < pad ? 0 : h - 1
                    DecimationKernel.sumRows(input, from: y, through: y, repeatLastTo: 1, into: acc)
                    DecimationKernel.blockMeans(acc, width: w, channels: c, factor: f, scale: 1 / Float(f), lowWidth: lw, pad: pad, into: low)
                } else {
                    let first = f * (r - pad)
                    let last = min(first + f, h) - 1
                    DecimationKernel.sumRows(input, from: first, through: last, repeatLastTo: f, into: acc)
                    DecimationKernel.blockMeans(acc, width: w, channels: c, factor: f, scale: 1 / Float(f * f), lowWidth: lw, pad: pad, into: low)
                }
                LowResFIR.horizontal(low + c * (pad - 1), into: across.row(r) + c * (pad - 1), samples: outSamples, step: c, taps: taps)
            }
        }

        // 3+4. Per output band: the vertical FIR of each low-res row it needs (rows −1…lh), widened to
        // full width, then each output row a linear mix of two such rows.
        let outH = outputHeight, outW = outputWidth
        let rowScale = Float(h) / Float(outH)
        let outBands = Parallel.bandCount(for: outH, minimumPerBand: 32, workers: workers)
        leftOffset.withUnsafeBufferPointer { offsets in
        rightWeight.withUnsafeBufferPointer { weights in
            let offsets = UnsafeRawPointerBox(UnsafeRawPointer(offsets.baseAddress!))
            let weights = UnsafeRawPointerBox(UnsafeRawPointer(weights.baseAddress!))
            Parallel.forEachBand(of: outH, bands: outBands) { band, rows in
                let scratch = rowScratch[band].base
                let low = scratch + 3 * rowFloats
                let blurredRow = { (j: Int) -> UnsafeMutablePointer<Float> in
                    LowResFIR.vertical(across, centreRow: pad + j, column: c * (pad - 1), into: low, samples: outSamples, taps: taps)
                    return low
                }
                DecimationKernel.interpolate(rows: rows, blurredRow: blurredRow, factor: f, width: outW, lowHeight: lh,
                                             rowScale: rowScale, channels: c,
                                             offsets: offsets.pointer.assumingMemoryBound(to: Int32.self),
                                             weights: weights.pointer.assumingMemoryBound(to: Float.self),
                                             upper: UnsafeMutableRawPointer(scratch + rowFloats), lower: UnsafeMutableRawPointer(scratch + 2 * rowFloats),
                                             temp: scratch, output: output)
            }
        }}
    }
}

enum DecimationKernel {
    /// acc[0..<3w] = Σ rows first…last of the region (as floats), the last row counted again until
    /// `count` rows are summed (clamp-to-edge for a partial block at the bottom).
    static func sumRows(_ input: PixelRegion, from first: Int, through last: Int, repeatLastTo count: Int,
                        into acc: UnsafeMutablePointer<Float>) {
        let samples = input.channels * input.width
        let extra = UInt16(count - (last - first + 1))
        let lastRow = UnsafePointer(input.row(last))
        var i = 0
        // 16 samples at a time, summed as UInt16 (at most 64 rows × 255 fits), converted to float
        // once per block row.
        while i + 16 <= samples {
            @inline(__always) func load(_ p: UnsafePointer<UInt8>) -> SIMD16<UInt16> {
                uint16s(UnsafeRawPointer(p + i).loadUnaligned(as: SIMD16<UInt8>.self))
            }
            var sum = extra &* load(lastRow)
            for y in first...last { sum &+= load(input.row(y)) }
            store16(floats(int32s(sum)), acc + i)
            i += 16
        }
        while i < samples {
            var sum = Float(extra) * Float(lastRow[i])
            for y in first...last { sum += Float(input.row(y)[i]) }
            acc[i] = sum
            i += 1
        }
    }

    /// Sums `factor` pixels of `acc` per block (the last block repeats the edge pixel), times
    /// `scale`, into `out` at low-res pixel pad + i; fills the pad pixels on both sides with the
    /// edge pixels' own (vertically summed) values times `scale · factor`.
    static func blockMeans(_ acc: UnsafeMutablePointer<Float>, width w: Int, channels: Int, factor f: Int, scale: Float,
                           lowWidth lw: Int, pad: Int, into out: UnsafeMutablePointer<Float>) {
        if channels == 1 { return planeBlockMeans(acc, width: w, factor: f, scale: scale, lowWidth: lw, pad: pad, into: out) }
        @inline(__always) func pixel(_ x: Int) -> SIMD4<Float> {
            UnsafeRawPointer(acc + 3 * x).loadUnaligned(as: SIMD4<Float>.self)
        }
        var o = out + 3 * pad
        let fullBlocks = w / f
        // Spill: each 4-float store writes one float of the next pixel, rewritten next (the row has slack).
        for i in 0..<fullBlocks {
            var sum = pixel(f * i)
            for k in 1..<f { sum += pixel(f * i + k) }
            UnsafeMutableRawPointer(o).storeBytes(of: sum * scale, as: SIMD4<Float>.self)
            o += 3
        }
        if fullBlocks < lw {
            var sum = SIMD4<Float>()
            for k in 0..<f { sum += pixel(min(f * fullBlocks + k, w - 1)) }
            UnsafeMutableRawPointer(o).storeBytes(of: sum * scale, as: SIMD4<Float>.self)
        }
        let edge = scale * Float(f)
        for c in 0..<3 {
            let left = acc[c] * edge, right = acc[3 * (w - 1) + c] * edge
            for k in 0..<pad {
                out[3 * k + c] = left
                out[3 * (pad + lw + k) + c] = right
            }
        }
    }

    /// `blockMeans` for one sample per pixel (a plane).
    static func planeBlockMeans(_ acc: UnsafeMutablePointer<Float>, width w: Int, factor f: Int, scale: Float, lowWidth lw: Int,
                                pad: Int, into out: UnsafeMutablePointer<Float>) {
        let o = out + pad
        let fullBlocks = w / f
        var i = 0
        // 16 samples at a time: adjacent pairs summed log2(f) times leave 16/f block sums.
        if f <= 8 {
            let perStep = 16 / f
            while (i + perStep) * f <= fullBlocks * f, i + perStep <= fullBlocks {
                let v = load16(acc + f * i)
                let pairs = v.evenHalf + v.oddHalf
                if f == 2 {
                    store8(pairs * scale, o + i)
                } else {
                    let quads = pairs.evenHalf + pairs.oddHalf
                    if f == 4 {
                        UnsafeMutableRawPointer(o + i).storeBytes(of: quads * scale, as: SIMD4<Float>.self)
                    } else {
                        let eights = quads.evenHalf + quads.oddHalf
                        UnsafeMutableRawPointer(o + i).storeBytes(of: eights * scale, as: SIMD2<Float>.self)
                    }
                }
                i += perStep
            }
        }
        while i < fullBlocks {
            var sum: Float = 0
            for k in 0..<f { sum += acc[f * i + k] }
            o[i] = sum * scale
            i += 1
        }
        // The last block, partial: the edge sample repeats (clamp-to-edge).
        while i < lw {
            var sum: Float = 0
            for k in 0..<f { sum += acc[min(f * i + k, w - 1)] }
            o[i] = sum * scale
            i += 1
        }
        let edge = scale * Float(f)
        let left = acc[0] * edge, right = acc[w - 1] * edge
        for k in 0..<pad {
            out[k] = left
            out[pad + lw + k] = right
        }
    }

    /// Output rows `rows`: each is a linear mix of two horizontally interpolated blurred rows.
    /// `blurredRow(j)` gives the blurred low-res row j (−1…lowHeight), pixel −1 at offset 0.
    ///
    /// The widened rows are UInt16 in fixed point (value · 2^(8−k)) and the row weights multiples of
    /// 2^−k, with 2^k = min(2f, 32): the weights (2r + 1)/2f are then exact for f ≤ 16, every
    /// product and sum fits 16 bits (255 · 256), and the mix is 8 lanes per SSE2 instruction.
    static func interpolate(rows: Range<Int>, blurredRow: (Int) -> UnsafeMutablePointer<Float>, factor f: Int, width w: Int,
                            lowHeight: Int, rowScale: Float, channels: Int, offsets: UnsafePointer<Int32>, weights: UnsafePointer<Float>,
                            upper: UnsafeMutableRawPointer, lower: UnsafeMutableRawPointer, temp: UnsafeMutablePointer<Float>,
                            output: PixelRegion) {
        let samples = channels * w
        var upper = upper, lower = lower
        var upperRow = Int.min, lowerRow = Int.min
        let half = Float(f - 1) / 2, inverse = 1 / Float(f)
        let one = min(2 * f, 32)                       // 2^k
        let valueScale = Float(256 / one)              // 2^(8−k)
        for y in rows {
            // Source row of output row y (y itself unless resizing), then its place between small rows.
            let source = rowScale == 1 ? Float(y) : (Float(y) + 0.5) * rowScale - 0.5
            let t = (source - half) * inverse
            let j0 = min(max(Int(t.rounded(.down)), -1), lowHeight - 1)     // −1…lowHeight−1
            let b = min(max(t - Float(j0), 0), 1)
            if upperRow != j0 {
                if lowerRow == j0 {
                    swap(&upper, &lower)
                    lowerRow = upperRow
                    upperRow = j0
                } else {
                    widen(blurredRow(j0), into: upper, width: w, channels: channels, offsets: offsets, weights: weights, scale: valueScale, temp: temp)
                    upperRow = j0
                }
            }
            if lowerRow != j0 + 1 {
                widen(blurredRow(j0 + 1), into: lower, width: w, channels: channels, offsets: offsets, weights: weights, scale: valueScale, temp: temp)
                lowerRow = j0 + 1
            }
            let lowerWeight = UInt16((b * Float(one)).rounded())
            let wb = SIMD16<UInt16>(repeating: lowerWeight), wa = SIMD16<UInt16>(repeating: UInt16(one) - lowerWeight)
            let out = output.row(y)
            var i = 0
            while i + 16 <= samples {
                let a = upper.loadUnaligned(fromByteOffset: 2 * i, as: SIMD16<UInt16>.self)
                let c = lower.loadUnaligned(fromByteOffset: 2 * i, as: SIMD16<UInt16>.self)
                let value = (a &* wa &+ c &* wb &+ 128) &>> 8
                UnsafeMutableRawPointer(out + i).storeBytes(of: lowBytes(value), as: SIMD16<UInt8>.self)
                i += 16
            }
            while i < samples {
                let a = UInt32(upper.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self))
                let c = UInt32(lower.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self))
                out[i] = UInt8(truncatingIfNeeded: (a * UInt32(wa[0]) + c * UInt32(wb[0]) + 128) >> 8)
                i += 1
            }
        }
    }

    /// One blurred low-res row (pixel −1 at offset 0) interpolated to `w` full-resolution pixels,
    /// stored as rounded UInt16 of value · `scale`. Interpolates into float `temp` one pixel at a
    /// time, then rounds 16 samples at a time (a narrowing per pixel costs more than the rest).
    @inline(__always)
    static func widen(_ row: UnsafeMutablePointer<Float>, into out: UnsafeMutableRawPointer, width w: Int, channels: Int,
                      offsets: UnsafePointer<Int32>, weights: UnsafePointer<Float>, scale: Float,
                      temp: UnsafeMutablePointer<Float>) {
        var o = temp
        if channels == 1 {
            for x in 0..<w {
                let p = row + Int(offsets[x])
                o[x] = p[0] + weights[x] * (p[1] - p[0])
            }
        } else {
        for x in 0..<w {
            let p = row + Int(offsets[x])
            let left = UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Float>.self)
            let right = UnsafeRawPointer(p + 3).loadUnaligned(as: SIMD4<Float>.self)
            // The fourth lane spills into the next pixel, which is written next; the row has slack.
            UnsafeMutableRawPointer(o).storeBytes(of: left + weights[x] * (right - left), as: SIMD4<Float>.self)
            o += 3
        }
        }
        // Values are in 0…255 (all weights are positive), so value · scale ≤ 8160: the 2²³ trick
        // rounds it into the low bits. Rounds up to 15 samples past the row, into its slack.
        let samples = channels * w
        var i = 0
        while i < samples {
            let bits = unsafeBitCast(load16(temp + i) * scale + 12_582_912, to: SIMD16<UInt32>.self) & 0xFFFF
            out.storeBytes(of: lowHalves(bits), toByteOffset: 2 * i, as: SIMD16<UInt16>.self)
            i += 16
        }
    }
}

/// Separable FIR on float rows (samples interleaved, pixel step `step`: 3 for RGB, 1 for a plane),
/// inputs already padded.
enum LowResFIR {
    static func horizontal(_ input: UnsafeMutablePointer<Float>, into out: UnsafeMutablePointer<Float>, samples: Int, step: Int,
                           taps: [Float]) {
        let radius = taps.count - 1
        taps.withUnsafeBufferPointer { taps in
            var i = 0
            while i < samples {
                let c = UnsafePointer(input + i)
                var acc = taps[0] * load16(c)
                var k = 1, offset = step
                while k <= radius {
                    acc += taps[k] * (load16(c - offset) + load16(c + offset))
                    k &+= 1
                    offset &+= step
                }
                store16(acc, out + i)
                i &+= 16
            }
        }
    }

    static func vertical(_ plane: FloatPlane, centreRow: Int, column: Int, into out: UnsafeMutablePointer<Float>,
                         samples: Int, taps: [Float]) {
        let radius = taps.count - 1
        let stride = plane.stride
        taps.withUnsafeBufferPointer { taps in
            let centre = UnsafePointer(plane.row(centreRow) + column)
            var i = 0
            while i < samples {
                let c = centre + i
                var acc = taps[0] * load16(c)
                var k = 1, offset = stride
                while k <= radius {
                    acc += taps[k] * (load16(c - offset) + load16(c + offset))
                    k &+= 1
                    offset &+= stride
                }
                store16(acc, out + i)
                i &+= 16
            }
        }
    }
}
