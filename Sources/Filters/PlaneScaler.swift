import CCPUFeatures

/// A resampler's weights in 16-bit fixed point, for the plane scaler: each output is
/// `(bias + Σₖ qₖ · sampleₖ) >> shift − floor`, rounded half to even as the float passes round
/// (an area or bilinear halving lands on exact halves: rounding them all up measured 2 dB lower),
/// clamped to a byte, with the qₖ summing to 2^shift. Products and sums wrap in UInt16 lanes,
/// which is exact because every output's final sum (negative lobes lifted by `bias`) lies in
/// 0...65535: sixteen samples a multiply and no conversions to float and back, twice the samples
/// per instruction of the float pass. `shift` is the largest that fits: 8 for kernels without
/// negative lobes (bilinear, area), 7 for bicubic.
final class FixedPointAxis: @unchecked Sendable {
    let taps: Int
    /// Output i reads source samples `indices[i·taps + k]` with weights `weights[i·taps + k]`
    /// (Int16 bit patterns). Read-only after init, so threads share it.
    let indices: UnsafeMutablePointer<Int32>
    let weights: UnsafeMutablePointer<UInt16>
    let shift: UInt16
    let bias: UInt16
    let floor: UInt16
    /// The largest Σₖ |qₖ / 2^shift − wₖ| of an output: how far the quantised kernel strays. With
    /// many taps (a strong downscale) each weight is a few units of 2^-shift and the kernel's
    /// shape is lost: at 0.18 (a 20× bicubic downscale) a 640×360 test picture still agreed with
    /// libswscale's `scale` at 47 dB on luma; at 0.31 (27×) 37 dB and at 0.52 (80×) 31 dB, where
    /// the float RGB scaler gave 43 and 38 (measured).
    let weightError: Double

    /// The largest `weightError` the plane scaler takes; beyond it the chain stays on RGB.
    static let tolerableWeightError = 0.2

    /// The taps in pairs, for a multiply-add of byte pairs (AVX2's PMADDUBSW: half the multiplies
    /// of 16-bit lanes). Tap k goes with tap k + ⌈taps/2⌉ (a large weight with a small one), an odd
    /// one out with a zero weight on its own row. Output i's pair p reads rows
    /// `pairIndices[(i·pairCount + p)·2 ..< +2]` with the two weights as the low and high byte of
    /// `pairWeights[i·pairCount + p]`. `pairCount` is 0 when a weight is outside −128…127 or a
    /// pair's sum of 255s could pass ±32767 (the instruction saturates there, sixteen-bit lanes
    /// wrap): then the pairs are not used, and results never depend on which loop ran.
    private(set) var pairCount: Int
    let pairIndices: UnsafeMutablePointer<Int32>
    let pairWeights: UnsafeMutablePointer<Int16>

    /// Whether this build multiplies byte pairs (the Filters module built for AVX2).
    static var bytePairsAvailable: Bool {
#if LIVEFILTER_AVX2
        true
#else
        false
#endif
    }

    /// `bytePairs` false keeps the pairs unused (`pairCount` 0), to compare the two loops.
    init(_ axis: ResampleAxis, bytePairs: Bool = true) {
        let taps = axis.taps, count = axis.weights.count
        for shift in stride(from: 8, through: 1, by: -1) {
            let one = 1 << shift
            var quantised = [Int](repeating: 0, count: count)
            var lowest = 0, highest = 0
            for row in stride(from: 0, to: count, by: taps).map({ $0 ..< $0 + taps }) {
                for k in row { quantised[k] = Int((Double(axis.weights[k]) * Double(one)).rounded()) }
                // The rounding error goes to the largest weight, so a flat picture stays exact.
                let largest = row.max { abs(quantised[$0]) < abs(quantised[$1]) }!
                quantised[largest] += one - row.reduce(0) { $0 + quantised[$1] }
                lowest = min(lowest, 255 * row.reduce(0) { $0 + min(0, quantised[$1]) })
                highest = max(highest, 255 * row.reduce(0) { $0 + max(0, quantised[$1]) })
            }
            let floor = (-lowest + one - 1) / one
            let bias = floor * one + one / 2 - 1
            guard bias + 1 + highest <= Int(UInt16.max), floor + 255 <= Int(UInt16.max) >> shift else { continue }
            self.taps = taps
            indices = .allocate(capacity: max(1, count))
            weights = .allocate(capacity: max(1, count))
            for k in 0..<count {
                indices[k] = axis.indices[k]
                weights[k] = UInt16(bitPattern: Int16(quantised[k]))
            }
            self.shift = UInt16(shift)
            self.bias = UInt16(bias)
            self.floor = UInt16(floor)
            var worst = 0.0
            for row in stride(from: 0, to: count, by: taps) {
                let error = (row ..< row + taps).reduce(0.0) { $0 + abs(Double(quantised[$1]) / Double(one) - Double(axis.weights[$1])) }
                worst = max(worst, error)
            }
            weightError = worst
            (pairCount, pairIndices, pairWeights) = Self.pairs(taps: taps, indices: axis.indices, quantised: quantised)
            if !bytePairs || !Self.bytePairsAvailable { pairCount = 0 }
            return
        }
        preconditionFailure("resampling weights out of 16-bit range")
    }

    deinit {
        indices.deallocate()
        weights.deallocate()
        pairIndices.deallocate()
        pairWeights.deallocate()
    }

    /// `pairCount`, `pairIndices` and `pairWeights` for these taps (see `pairCount`).
    private static func pairs(taps: Int, indices: [Int32], quantised: [Int]) -> (Int, UnsafeMutablePointer<Int32>, UnsafeMutablePointer<Int16>) {
        let half = (taps + 1) / 2, outputs = quantised.count / max(1, taps)
        let pairIndices = UnsafeMutablePointer<Int32>.allocate(capacity: max(1, outputs * half * 2))
        let pairWeights = UnsafeMutablePointer<Int16>.allocate(capacity: max(1, outputs * half))
        for i in 0..<outputs {
            let base = i * taps
            for p in 0..<half {
                let a = base + p, b = p + half < taps ? base + p + half : a
                let wa = quantised[a], wb = b == a ? 0 : quantised[b]
                guard (-128...127).contains(wa), (-128...127).contains(wb),
                      255 * (max(0, wa) + max(0, wb)) <= Int(Int16.max),
                      255 * (min(0, wa) + min(0, wb)) >= -Int(Int16.max) else { return (0, pairIndices, pairWeights) }
                pairIndices[(i * half + p) * 2] = indices[a]
                pairIndices[(i * half + p) * 2 + 1] = indices[b]
                pairWeights[i * half + p] = Int16(truncatingIfNeeded: (wa & 0xff) | (wb << 8))
            }
        }
        return (half, pairIndices, pairWeights)
    }

    /// The last (largest) source index output `index` reads.
    func lastRow(of index: Int) -> Int {
        var last = 0
        for k in 0..<taps { last = max(last, Int(indices[index &* taps &+ k])) }
        return last
    }

    /// `destination[0..<width]` = output `index`, tap k read from `rows[k] + x`, sixteen samples
    /// a vector (`rows` holds the output's `taps` source rows). `ahead` (up to two rows a later
    /// output will read) is prefetched into L2 along the way, a line per 64 samples.
    @inline(__always)
    func resample(output index: Int, rows: UnsafePointer<UnsafePointer<UInt8>>, width: Int,
                  into destination: UnsafeMutablePointer<UInt8>, ahead: (UnsafePointer<UInt8>?, UnsafePointer<UInt8>?) = (nil, nil)) {
        let w = weights + index &* taps, rounding = rounding
        var i = 0
        // 32 samples a step: each row pointer and weight is loaded once for two vectors. The common
        // kernels have their tap count fixed at compile time, so the weights and row pointers stay
        // in registers across the row.
        switch taps {
        case 4: i = steps(InlineArray<4, UnsafePointer<UInt8>> { rows[$0] }, w, width: width, into: destination, ahead: ahead)
        case 6: i = steps(InlineArray<6, UnsafePointer<UInt8>> { rows[$0] }, w, width: width, into: destination, ahead: ahead)
        case 8: i = steps(InlineArray<8, UnsafePointer<UInt8>> { rows[$0] }, w, width: width, into: destination, ahead: ahead)
        default:
            let taps = taps, bias = bias
            i = steps(width: width, into: destination, ahead: ahead) { i in
                var acc0 = SIMD16<UInt16>(repeating: bias), acc1 = acc0
                for k in 0..<taps {
                    let row = UnsafeRawPointer(rows[k] + i), weight = SIMD16<UInt16>(repeating: w[k])
                    acc0 &+= uint16s(row.loadUnaligned(as: SIMD16<UInt8>.self)) &* weight
                    acc1 &+= uint16s(row.loadUnaligned(fromByteOffset: 16, as: SIMD16<UInt8>.self)) &* weight
                }
                return (acc0, acc1)
            }
        }
        while i + 16 <= width {
            var acc = SIMD16<UInt16>(repeating: bias)
            for k in 0..<taps {
                let samples = UnsafeRawPointer(rows[k] + i).loadUnaligned(as: SIMD16<UInt8>.self)
                acc &+= uint16s(samples) &* SIMD16(repeating: w[k])
            }
            UnsafeMutableRawPointer(destination + i).storeBytes(of: roundedBytes(acc, rounding), as: SIMD16<UInt8>.self)
            i += 16
        }
        while i < width {
            var acc = bias
            for k in 0..<taps { acc &+= UInt16(rows[k][i]) &* w[k] }
            let v = (acc + (acc >> shift) & 1) >> shift
            destination[i] = UInt8(min(max(v, floor), floor + 255) - floor)
            i += 1
        }
    }

#if LIVEFILTER_AVX2
    /// `resample` with the taps in pairs (`pairCount` > 0): `rows` holds each pair's two rows in
    /// turn, as `pairIndices` lists them. The same sums as `resample`, so the same bytes.
    @inline(__always)
    func resamplePairs(output index: Int, rows: UnsafePointer<UnsafePointer<UInt8>>, width: Int,
                       into destination: UnsafeMutablePointer<UInt8>, ahead: (UnsafePointer<UInt8>?, UnsafePointer<UInt8>?) = (nil, nil)) {
        let w = pairWeights + index &* pairCount
        var i = 0
        switch pairCount {
        case 2: i = pairSteps(InlineArray<4, UnsafePointer<UInt8>> { rows[$0] }, InlineArray<2, SIMD32<Int8>> { pairWeight(w[$0]) },
                              width: width, into: destination, ahead: ahead)
        case 3: i = pairSteps(InlineArray<6, UnsafePointer<UInt8>> { rows[$0] }, InlineArray<3, SIMD32<Int8>> { pairWeight(w[$0]) },
                              width: width, into: destination, ahead: ahead)
        case 4: i = pairSteps(InlineArray<8, UnsafePointer<UInt8>> { rows[$0] }, InlineArray<4, SIMD32<Int8>> { pairWeight(w[$0]) },
                              width: width, into: destination, ahead: ahead)
        default:
            let pairs = pairCount, bias = pairRounding.bias
            i = pairSteps(width: width, into: destination, ahead: ahead) { i in
                var low = bias, high = bias
                for p in 0..<pairs {
                    addPairSums(&low, &high, UnsafeRawPointer(rows[2 &* p] + i), UnsafeRawPointer(rows[2 &* p &+ 1] + i), pairWeight(w[p]))
                }
                return (low, high)
            }
        }
        while i < width {
            var acc = bias
            for p in 0..<pairCount {
                let weights = UInt16(bitPattern: w[p])
                acc &+= UInt16(rows[2 &* p][i]) &* UInt16(bitPattern: Int16(Int8(truncatingIfNeeded: weights)))
                acc &+= UInt16(rows[2 &* p &+ 1][i]) &* UInt16(bitPattern: Int16(w[p] >> 8))
            }
            let v = (acc + (acc >> shift) & 1) >> shift
            destination[i] = UInt8(min(max(v, floor), floor + 255) - floor)
            i += 1
        }
    }

    /// `resamplePairs`' steps for `P` pairs (rows `rows[2p]`, `rows[2p + 1]`, weights `weight[p]`).
    @inline(__always)
    private func pairSteps<let N: Int, let P: Int>(_ rows: InlineArray<N, UnsafePointer<UInt8>>, _ weight: InlineArray<P, SIMD32<Int8>>,
                                                   width: Int, into destination: UnsafeMutablePointer<UInt8>,
                                                   ahead: (UnsafePointer<UInt8>?, UnsafePointer<UInt8>?)) -> Int {
        let bias = pairRounding.bias
        return pairSteps(width: width, into: destination, ahead: ahead) { i in
            var low = bias, high = bias
            for p in 0..<P {
                addPairSums(&low, &high, UnsafeRawPointer(rows[2 &* p] + i), UnsafeRawPointer(rows[2 &* p &+ 1] + i), weight[p])
            }
            return (low, high)
        }
    }

    /// `resamplePairs`' 32-sample steps: `sums(i)` gives the pair sums of samples i..<i + 32 (the
    /// interleaved halves, `lf_pair_sums_low` and `_high`), rounded and stored here; `ahead` is
    /// prefetched into L2, a line per 64 samples. Returns the next sample to do. (The same loop
    /// as `steps` but for the rounding: one loop over closures returning 32 rounded bytes made the
    /// 16-bit path slower, a bilinear scale 0.54–0.60 → 0.61–0.70 ms in the pipeline.)
    @inline(__always)
    private func pairSteps(width: Int, into destination: UnsafeMutablePointer<UInt8>, ahead: (UnsafePointer<UInt8>?, UnsafePointer<UInt8>?),
                           _ sums: (Int) -> (SIMD16<Int16>, SIMD16<Int16>)) -> Int {
        let rounding = pairRounding
        var i = 0
        while i + 32 <= width {
            if i & 63 == 0 {
                if let a = ahead.0 { lf_prefetch_l2(a + i) }
                if let b = ahead.1 { lf_prefetch_l2(b + i) }
            }
            let (low, high) = sums(i)
            UnsafeMutableRawPointer(destination + i).storeBytes(of: roundedPairs(low, high, rounding), as: SIMD32<UInt8>.self)
            i += 32
        }
        return i
    }

    /// What `roundedPairs` takes: the bias the sums start from, the shift and the floor.
    var pairRounding: (bias: SIMD16<Int16>, shift: SIMD16<UInt16>, floor: SIMD16<UInt16>) {
        (SIMD16(repeating: Int16(bitPattern: bias)), SIMD16(repeating: shift), SIMD16(repeating: floor))
    }
#endif

    /// What `roundedBytes` takes: the shift and the floor.
    var rounding: (shift: UInt16, floor: UInt16) { (shift, floor) }

    /// `resample`'s steps for `N` taps (`rows`, weights `w`).
    @inline(__always)
    private func steps<let N: Int>(_ rows: InlineArray<N, UnsafePointer<UInt8>>, _ w: UnsafeMutablePointer<UInt16>, width: Int,
                                   into destination: UnsafeMutablePointer<UInt8>,
                                   ahead: (UnsafePointer<UInt8>?, UnsafePointer<UInt8>?)) -> Int {
        let weight = InlineArray<N, SIMD16<UInt16>> { SIMD16(repeating: w[$0]) }
        let bias = bias
        return steps(width: width, into: destination, ahead: ahead) { i in
            var acc0 = SIMD16<UInt16>(repeating: bias), acc1 = acc0
            for k in 0..<N {
                let row = UnsafeRawPointer(rows[k] + i)
                acc0 &+= uint16s(row.loadUnaligned(as: SIMD16<UInt8>.self)) &* weight[k]
                acc1 &+= uint16s(row.loadUnaligned(fromByteOffset: 16, as: SIMD16<UInt8>.self)) &* weight[k]
            }
            return (acc0, acc1)
        }
    }

    /// `resample`'s 32-sample steps: `sums(i)` gives the fixed-point sums of samples i..<i + 16 and
    /// i + 16..<i + 32, rounded and stored here; `ahead` is prefetched into L2, a line per 64 samples.
    /// Returns the next sample to do.
    @inline(__always)
    private func steps(width: Int, into destination: UnsafeMutablePointer<UInt8>, ahead: (UnsafePointer<UInt8>?, UnsafePointer<UInt8>?),
                       _ sums: (Int) -> (SIMD16<UInt16>, SIMD16<UInt16>)) -> Int {
        let rounding = rounding
        var i = 0
        while i + 32 <= width {
            if i & 63 == 0 {
                if let a = ahead.0 { lf_prefetch_l2(a + i) }
                if let b = ahead.1 { lf_prefetch_l2(b + i) }
            }
            let (acc0, acc1) = sums(i)
            UnsafeMutableRawPointer(destination + i).storeBytes(of: roundedBytes(acc0, rounding), as: SIMD16<UInt8>.self)
            UnsafeMutableRawPointer(destination + i + 16).storeBytes(of: roundedBytes(acc1, rounding), as: SIMD16<UInt8>.self)
            i += 32
        }
        return i
    }
}

/// Sixteen fixed-point sums as bytes: shifted down with rounding half to even, lifted by `floor`,
/// clamped to 0...255. Transparent: with `@inline(__always)` the compiler left some calls
/// outlined (a call and a `vzeroupper` per vector: 0.92 ms a 1080p scale against 0.85 inlined).
@_transparent
func roundedBytes(_ acc: SIMD16<UInt16>, _ rounding: (shift: UInt16, floor: UInt16)) -> SIMD16<UInt8> {
    let shift = SIMD16<UInt16>(repeating: rounding.shift)
    let v = (acc &+ (acc &>> shift) & 1) &>> shift
    // At most 65535 >> 1 (the shift is at least 1), so a signed lane: the clamp is a signed pack.
    return saturatedBytes(unsafeBitCast(v &- SIMD16<UInt16>(repeating: rounding.floor), to: SIMD16<Int16>.self))
}

#if LIVEFILTER_AVX2
/// A pair's two weights (low byte first), repeated across the vector as PMADDUBSW takes them.
@_transparent
func pairWeight(_ weights: Int16) -> SIMD32<Int8> {
    unsafeBitCast(SIMD16<Int16>(repeating: weights), to: SIMD32<Int8>.self)
}

/// One pair of taps added to the sums of 32 outputs: the 32 samples at `a` and at `b` (unaligned),
/// weighted by `weight` (`pairWeight`), into `low` and `high` (`lf_pair_sums_low`, `_high`).
@_transparent
func addPairSums(_ low: inout SIMD16<Int16>, _ high: inout SIMD16<Int16>, _ a: UnsafeRawPointer, _ b: UnsafeRawPointer,
                 _ weight: SIMD32<Int8>) {
    let x = a.loadUnaligned(as: SIMD32<UInt8>.self), y = b.loadUnaligned(as: SIMD32<UInt8>.self)
    low &+= lf_pair_sums_low(x, y, weight)
    high &+= lf_pair_sums_high(x, y, weight)
}

/// `roundedBytes` for the interleaved halves of pair sums (`lf_pair_sums_low`, `_high`): 32 bytes
/// in order.
@_transparent
func roundedPairs(_ low: SIMD16<Int16>, _ high: SIMD16<Int16>,
                  _ rounding: (bias: SIMD16<Int16>, shift: SIMD16<UInt16>, floor: SIMD16<UInt16>)) -> SIMD32<UInt8> {
    @_transparent func rounded(_ acc: SIMD16<Int16>) -> SIMD16<Int16> {
        let u = unsafeBitCast(acc, to: SIMD16<UInt16>.self)
        let v = (u &+ (u &>> rounding.shift) & 1) &>> rounding.shift
        return unsafeBitCast(v &- rounding.floor, to: SIMD16<Int16>.self)
    }
    return lf_pack_pair_sums(rounded(low), rounded(high))
}
#endif

/// Resizes one plane in bands of 32 output rows that stay in cache: the band's rows resampled
/// vertically (source rows weighted into each output row), the band turned on its side (32-byte
/// rows, one per source column, the band's two halves of 16 rows side by side) so the horizontal
/// resampling is a weighted sum of those rows too — 32 output rows per tap, each weight and index
/// loaded once for two vectors — then turned back into the destination. Nothing between the
/// passes leaves the core's cache, and bands are independent: one fork per plane.
/// Between the passes the picture is 8-bit, as libswscale's is 15-bit: half a level of rounding.
/// Built for AVX2, both passes multiply byte pairs where the axis allows (`FixedPointAxis.pairCount`):
/// 0.70 → 0.51 ms a 1080p → 720p scale in one process. (Resampling each row along itself instead,
/// its tap pairs picked out by byte shuffles, took 0.63: the turns cost less than the gathers.)
/// SPI for tests, which compare the byte-pair and 16-bit loops.
@_spi(Testing) public final class PlaneScaler: StreamingPlaneRenderer {
    public let inputSize: FrameSize
    public let outputSize: FrameSize
    var streamsOutput = false
    private let vertical: FixedPointAxis
    private let horizontal: FixedPointAxis
    /// Per worker: the band's vertically resampled rows (32 × source width), the same turned
    /// (source width × 32), and the resampled turned band (output width × 32).
    private let scratch: [(rows: ScratchBuffer<UInt8>, turned: ScratchBuffer<UInt8>, scaled: ScratchBuffer<UInt8>)]
    private let workers: Int
    static let band = 32

    /// Whether 16-bit fixed point resamples `inputSize` → `outputSize` close to the float kernel
    /// (`FixedPointAxis.weightError`); a strong downscale is left to the RGB scaler.
    static func isPrecise(method: Scale.Method, inputSize: FrameSize, outputSize: FrameSize) -> Bool {
        axis(method, inputSize.width, outputSize.width) != nil && axis(method, inputSize.height, outputSize.height) != nil
    }

    /// The fixed-point axis for `source` → `destination` samples, nil when it strays too far.
    private static func axis(_ method: Scale.Method, _ source: Int, _ destination: Int, bytePairs: Bool = true) -> FixedPointAxis? {
        let axis = FixedPointAxis(ResampleAxis(source: source, destination: destination, method: method), bytePairs: bytePairs)
        return axis.weightError <= FixedPointAxis.tolerableWeightError ? axis : nil
    }

    /// Nil when the resampling is not precise in 16-bit fixed point (`isPrecise`).
    /// `bytePairs` false: never multiply byte pairs (tests compare the two).
    public init?(method: Scale.Method, inputSize: FrameSize, outputSize: FrameSize, workers: Int = Parallel.workerCount, bytePairs: Bool = true) {
        guard let vertical = Self.axis(method, inputSize.height, outputSize.height, bytePairs: bytePairs),
              let horizontal = Self.axis(method, inputSize.width, outputSize.width, bytePairs: bytePairs) else { return nil }
        (self.inputSize, self.outputSize, self.workers) = (inputSize, outputSize, workers)
        (self.vertical, self.horizontal) = (vertical, horizontal)
        let n = Self.band
        scratch = (0..<max(1, workers)).map { _ in
            (ScratchBuffer(count: n * inputSize.width, zero: 0), ScratchBuffer(count: inputSize.width * n, zero: 0),
             ScratchBuffer(count: outputSize.width * n, zero: 0))
        }
    }

    /// Whether this build can multiply byte pairs at all (`FixedPointAxis.bytePairsAvailable`).
    public static var bytePairsAvailable: Bool { FixedPointAxis.bytePairsAvailable }

    /// Which passes multiply byte pairs: (vertical, horizontal).
    public var bytePairs: (vertical: Bool, horizontal: Bool) { (vertical.pairCount > 0, horizontal.pairCount > 0) }

    public func render(_ source: Plane, into destination: Plane) {
        let n = Self.band, groups = (outputSize.height + n - 1) / n
        let vertical = vertical, horizontal = horizontal, scratch = scratch
        let inWidth = inputSize.width, outWidth = outputSize.width, outHeight = outputSize.height, streaming = streamsOutput
        Parallel.forEachBand(of: groups, bands: Parallel.bandCount(for: groups, minimumPerBand: 2, workers: workers)) { worker, range in
            let (rows, turned, scaled) = (scratch[worker].rows.base, scratch[worker].turned.base, scratch[worker].scaled.base)
            withUnsafeTemporaryAllocation(of: UnsafePointer<UInt8>.self, capacity: max(vertical.taps, 2 * vertical.pairCount)) { taps in
                let sourceRows = taps.baseAddress!
                for group in range {
                    let y0 = group * n, count = min(n, outHeight - y0)
                    // The next band's new source rows, two per output row of this one: the picture
                    // comes from the decoder out of this core's caches, and waiting on those loads
                    // was most of the pass (measured with `perf`).
                    let current = vertical.lastRow(of: y0 + count - 1)
                    let next = group + 1 < range.upperBound ? vertical.lastRow(of: min(y0 + 2 * n, outHeight) - 1) : current
                    @inline(__always) func row(_ y: Int) -> UnsafePointer<UInt8>? {
                        y <= next ? UnsafePointer(source.base + y &* source.stride) : nil
                    }
                    for r in 0..<count {
#if LIVEFILTER_AVX2
                        if vertical.pairCount > 0 {
                            for k in 0..<2 * vertical.pairCount {
                                sourceRows[k] = UnsafePointer(source.base + Int(vertical.pairIndices[(y0 + r) &* 2 &* vertical.pairCount &+ k]) &* source.stride)
                            }
                            vertical.resamplePairs(output: y0 + r, rows: sourceRows, width: inWidth, into: rows + r * inWidth,
                                                   ahead: (row(current + 1 + 2 * r), row(current + 2 + 2 * r)))
                            continue
                        }
#endif
                        for k in 0..<vertical.taps {
                            sourceRows[k] = UnsafePointer(source.base + Int(vertical.indices[(y0 + r) &* vertical.taps &+ k]) &* source.stride)
                        }
                        vertical.resample(output: y0 + r, rows: sourceRows, width: inWidth, into: rows + r * inWidth,
                                          ahead: (row(current + 1 + 2 * r), row(current + 2 + 2 * r)))
                    }
                    // Band row r, column x → turned row x, column r: both halves at once (a short band turns
                    // its second half too, from rows the band before left: never turned back).
                    BandTranspose.turnBand(rows, stride: inWidth, width: inWidth, into: turned)
                    Self.horizontalPass(horizontal, turned: turned, width: outWidth, into: scaled)
                    // Turned row x, column r → destination row y0 + r, column x.
                    BandTranspose.unturn(scaled, width: outWidth, into: destination.row(y0), stride: destination.stride,
                                         rows: min(count, 16), pitch: n, streaming: streaming)
                    if count > 16 {
                        BandTranspose.unturn(scaled + 16, width: outWidth, into: destination.row(y0 + 16), stride: destination.stride,
                                             rows: count - 16, pitch: n, streaming: streaming)
                    }
                }
            }
            if streaming { LineStream.finish() }
        }
    }

    /// Output column x of the turned band (32 samples, one per band row) from the turned rows of
    /// its taps: two vectors per output. A band of 16 rows or fewer computes its empty second half
    /// too (initialised scratch, never turned back): one band per plane, simpler than a branch.
    static func horizontalPass(_ axis: FixedPointAxis, turned: UnsafePointer<UInt8>, width: Int, into scaled: UnsafeMutablePointer<UInt8>) {
#if LIVEFILTER_AVX2
        if axis.pairCount > 0 {
            let pairs = axis.pairCount, rounding = axis.pairRounding
            for x in 0..<width {
                let ix = axis.pairIndices + x &* 2 &* pairs, w = axis.pairWeights + x &* pairs
                var low = rounding.bias, high = low
                for p in 0..<pairs {
                    addPairSums(&low, &high, UnsafeRawPointer(turned + Int(ix[2 &* p]) &<< 5),
                                UnsafeRawPointer(turned + Int(ix[2 &* p &+ 1]) &<< 5), pairWeight(w[p]))
                }
                UnsafeMutableRawPointer(scaled + x &<< 5).storeBytes(of: roundedPairs(low, high, rounding), as: SIMD32<UInt8>.self)
            }
            return
        }
#endif
        let taps = axis.taps, rounding = axis.rounding
        for x in 0..<width {
            let ix = axis.indices + x &* taps, w = axis.weights + x &* taps
            var acc0 = SIMD16<UInt16>(repeating: axis.bias), acc1 = acc0
            for k in 0..<taps {
                let row = UnsafeRawPointer(turned + Int(ix[k]) &<< 5), weight = SIMD16<UInt16>(repeating: w[k])
                acc0 &+= uint16s(row.loadUnaligned(as: SIMD16<UInt8>.self)) &* weight
                acc1 &+= uint16s(row.loadUnaligned(fromByteOffset: 16, as: SIMD16<UInt8>.self)) &* weight
            }
            let out = UnsafeMutableRawPointer(scaled + x &<< 5)
            out.storeBytes(of: roundedBytes(acc0, rounding), as: SIMD16<UInt8>.self)
            out.storeBytes(of: roundedBytes(acc1, rounding), toByteOffset: 16, as: SIMD16<UInt8>.self)
        }
    }
}
