/// The Y′CbCr matrix of a video signal (ITU-R BT.601, BT.709 and BT.2020 non-constant luminance).
public enum YUVMatrix: String, CaseIterable, Sendable {
    case bt601, bt709, bt2020

    /// Luma weights of red and blue (green is 1 − Kr − Kb).
    public var kr: Double {
        switch self {
        case .bt601: 0.299
        case .bt709: 0.2126
        case .bt2020: 0.2627
        }
    }

    public var kb: Double {
        switch self {
        case .bt601: 0.114
        case .bt709: 0.0722
        case .bt2020: 0.0593
        }
    }
}

/// Quantisation range of 8-bit Y′CbCr: `limited` (“TV”, Y 16…235, C 16…240) or `full` (“PC”/JPEG, 0…255).
public enum YUVRange: String, CaseIterable, Sendable {
    case limited, full
}

/// Three 8-bit planes of a 4:2:0 picture, `width`×`height` luma samples and ⌈w/2⌉×⌈h/2⌉ chroma
/// samples, rows `…Stride` bytes apart. A view: it does not own the memory (an `AVFrame`'s planes,
/// for example); the caller keeps it alive and unshared while a conversion runs.
///
/// `ownsRowPadding`: the bytes of each row past the picture, up to the stride, are the row's own
/// padding (an `AVFrame`'s planes), which a pass may overwrite: a quarter turn writing the planar
/// chain's output then writes a row's last cache line whole. False for a view into a larger picture.
public struct PlanarYUV420View: @unchecked Sendable {
    public var width: Int
    public var height: Int
    public var y: UnsafeMutablePointer<UInt8>
    public var yStride: Int
    public var u: UnsafeMutablePointer<UInt8>
    public var uStride: Int
    public var v: UnsafeMutablePointer<UInt8>
    public var vStride: Int
    public var ownsRowPadding: Bool

    public init(width: Int, height: Int,
                y: UnsafeMutablePointer<UInt8>, yStride: Int,
                u: UnsafeMutablePointer<UInt8>, uStride: Int,
                v: UnsafeMutablePointer<UInt8>, vStride: Int, ownsRowPadding: Bool = false) {
        precondition(width > 0 && height > 0, "PlanarYUV420View needs a positive size, got \(width)x\(height)")
        self.width = width
        self.height = height
        self.y = y; self.yStride = yStride
        self.u = u; self.uStride = uStride
        self.v = v; self.vStride = vStride
        self.ownsRowPadding = ownsRowPadding
    }

    public var chromaWidth: Int { (width + 1) / 2 }
    public var chromaHeight: Int { (height + 1) / 2 }
}

/// Packed RGB24 ↔ planar Y′CbCr 4:2:0 in pure Swift, for a given matrix and range. RGB is
/// full range (0…255), as everywhere in `Filters`.
///
/// **Chroma siting** is H.264/MPEG-2's default, “left” (`AVCHROMA_LOC_LEFT`): a chroma sample sits
/// horizontally on the even luma column and vertically half-way between two luma rows.
/// - RGB → 4:2:0: the two rows are averaged, and horizontally a [1 2 1]/4 filter centred on the even
///   column (edge columns repeated) band-limits before subsampling.
/// - 4:2:0 → RGB: bilinear reconstruction at those sites: even columns take the chroma sample, odd
///   columns the mean of its two neighbours; rows take ¾ of the nearer chroma row and ¼ of the other.
///
/// Both directions compute in `Float` and round to nearest once; results are within ±1 of an exact
/// double-precision evaluation of the same formulas. Rows are split into bands across
/// `Parallel.workerCount` cores (pairs of rows, so no chroma row is shared).
public struct YUVConverter: Hashable, Sendable {
    /// How RGB → 4:2:0 forms each chroma sample from its pixels.
    public enum ChromaDownsampling: String, Hashable, Sendable {
        /// [1 2 1]/4 across columns centred on the even column, rows averaged: H.264's left siting.
        case leftSited
        /// The mean of the 2×2 block: the exact inverse of chroma replication (libswscale's default
        /// 4:2:0 → RGB), so a decode → RGB → encode round trip keeps chroma as it was.
        case box
    }

    public var matrix: YUVMatrix
    public var range: YUVRange
    public var downsampling: ChromaDownsampling

    public init(matrix: YUVMatrix = .bt709, range: YUVRange = .limited, downsampling: ChromaDownsampling = .leftSited) {
        self.matrix = matrix
        self.range = range
        self.downsampling = downsampling
    }

    /// Y′ = yScale·(Kr R + Kg G + Kb B) + yOffset; Cb = cScale·(B − Y)/(2(1 − Kb)) + 128, Cr likewise.
    var yScale: Double { range == .limited ? 219.0 / 255.0 : 1 }
    var yOffset: Double { range == .limited ? 16 : 0 }
    var cScale: Double { range == .limited ? 224.0 / 255.0 : 1 }

    /// Rows of the forward matrix: (Y, Cb, Cr) = M · (R, G, B) + (yOffset, 128, 128).
    var forwardMatrix: [[Double]] {
        let kr = matrix.kr, kb = matrix.kb, kg = 1 - kr - kb
        let ys = yScale, cs = cScale
        return [
            [ys * kr, ys * kg, ys * kb],
            [cs * -kr / (2 * (1 - kb)), cs * -kg / (2 * (1 - kb)), cs * 0.5],
            [cs * 0.5, cs * -kg / (2 * (1 - kr)), cs * -kb / (2 * (1 - kr))],
        ]
    }

    /// R = a·(Y − yOffset) + rCr·(Cr − 128); G = a·(Y − yOffset) + gCb·(Cb − 128) + gCr·(Cr − 128); B = a·(Y − yOffset) + bCb·(Cb − 128).
    var inverseCoefficients: (a: Double, rCr: Double, gCb: Double, gCr: Double, bCb: Double) {
        let kr = matrix.kr, kb = matrix.kb, kg = 1 - kr - kb
        let a = 1 / yScale, c = 1 / cScale
        return (a, c * 2 * (1 - kr), -c * 2 * (1 - kb) * kb / kg, -c * 2 * (1 - kr) * kr / kg, c * 2 * (1 - kb))
    }

    /// The Y′, Cb, Cr samples of one RGB colour (a pad's fill, say), rounded.
    public func samples(of color: RGBColor) -> (y: UInt8, cb: UInt8, cr: UInt8) {
        let m = forwardMatrix
        let rgb = [Double(color.r), Double(color.g), Double(color.b)]
        func sample(_ row: Int, _ offset: Double) -> UInt8 {
            let value = m[row][0] * rgb[0] + m[row][1] * rgb[1] + m[row][2] * rgb[2] + offset
            return UInt8(min(max(value.rounded(), 0), 255))
        }
        return (sample(0, yOffset), sample(1, 128), sample(2, 128))
    }

    // MARK: RGB → 4:2:0

    /// Converts `yuv.width`×`yuv.height` pixels of packed RGB24 at `rgb` (rows `bytesPerRow` apart) into `yuv`.
    public func rgbToYUV420(_ rgb: UnsafePointer<UInt8>, bytesPerRow: Int, into yuv: PlanarYUV420View) {
        let m = forwardMatrix.map { $0.map(Float.init) }
        let k = YUVForwardKernel(
            yr: m[0][0], yg: m[0][1], yb: m[0][2], yo: Float(yOffset),
            ur: m[1][0] / 8, ug: m[1][1] / 8, ub: m[1][2] / 8,
            vr: m[2][0] / 8, vg: m[2][1] / 8, vb: m[2][2] / 8, box: downsampling == .box)
        let pairs = yuv.chromaHeight
        let bands = Parallel.bandCount(for: pairs, minimumPerBand: 16)
        let source = UnsafeRawPointerBox(UnsafeRawPointer(rgb))
        Parallel.forEachBand(of: pairs, bands: bands) { _, range in
            k.rowPairs(range, rgb: source.pointer.assumingMemoryBound(to: UInt8.self), rgbStride: bytesPerRow, yuv: yuv)
        }
    }

    /// Converts `image` (which must have the view's size) into `yuv`.
    public func rgbToYUV420(_ image: RGBImage, into yuv: PlanarYUV420View) {
        precondition(image.size == FrameSize(yuv.width, yuv.height), "rgbToYUV420: image \(image.size), planes \(yuv.width)x\(yuv.height)")
        rgbToYUV420(UnsafePointer(image.baseAddress), bytesPerRow: image.bytesPerRow, into: yuv)
    }

    // MARK: 4:2:0 → RGB

    /// Converts `yuv` into packed RGB24 at `rgb` (rows `bytesPerRow` apart, at least 3·width bytes each).
    public func yuv420ToRGB(_ yuv: PlanarYUV420View, into rgb: UnsafeMutablePointer<UInt8>, bytesPerRow: Int) {
        let c = inverseCoefficients
        let k = YUVInverseKernel(a: Float(c.a), yo: Float(yOffset), rCr: Float(c.rCr), gCb: Float(c.gCb),
                                 gCr: Float(c.gCr), bCb: Float(c.bCb))
        let pairs = yuv.chromaHeight
        let bands = Parallel.bandCount(for: pairs, minimumPerBand: 16)
        let destination = UnsafeRawPointerBox(UnsafeRawPointer(rgb))
        let chromaRow = yuv.chromaWidth + 16
        Parallel.forEachBand(of: pairs, bands: bands) { _, range in
            // Four chroma rows (Cb, Cr for the upper and lower luma row) of floats, plus slack for 8-wide reads.
            withUnsafeTemporaryAllocation(of: Float.self, capacity: 4 * chromaRow) { scratch in
                k.rowPairs(range, yuv: yuv, rgb: UnsafeMutablePointer(mutating: destination.pointer.assumingMemoryBound(to: UInt8.self)),
                           rgbStride: bytesPerRow, scratch: scratch.baseAddress!, scratchRow: chromaRow)
            }
        }
    }

    /// Converts `yuv` into `image`, which must have the view's size.
    public func yuv420ToRGB(_ yuv: PlanarYUV420View, into image: RGBImage) {
        precondition(image.size == FrameSize(yuv.width, yuv.height), "yuv420ToRGB: image \(image.size), planes \(yuv.width)x\(yuv.height)")
        yuv420ToRGB(yuv, into: image.baseAddress, bytesPerRow: image.bytesPerRow)
    }
}

/// A raw pointer carried into `@Sendable` band closures; bands touch disjoint rows.
struct UnsafeRawPointerBox: @unchecked Sendable {
    let pointer: UnsafeRawPointer
    init(_ pointer: UnsafeRawPointer) { self.pointer = pointer }
}

/// Reads pixel `x` of a packed RGB24 row as a 32-bit little-endian word R | G<<8 | B<<16 (| junk<<24).
/// Reads one byte past the pixel: callers use it only where that byte is inside the row.
@inline(__always)
private func pixelWord(_ row: UnsafePointer<UInt8>, _ x: Int) -> UInt32 {
    UnsafeRawPointer(row + 3 &* x).loadUnaligned(as: UInt32.self)
}

@inline(__always)
private func pixelWordSafe(_ row: UnsafePointer<UInt8>, _ x: Int) -> UInt32 {
    let p = row + 3 &* x
    return UInt32(p[0]) | UInt32(p[1]) << 8 | UInt32(p[2]) << 16
}

/// 16 packed RGB24 pixels (48 bytes at `p`, read exactly) as channels, even columns in lanes 0–7
/// and odd ones in 8–15. Each channel is three byte shuffles of the three 16-byte loads (lane
/// literals: LLVM makes each one `pshufb`, a zero lane a zeroed byte) or-ed together.
@inline(__always)
func deinterleaveRGB16(_ p: UnsafeRawPointer) -> (r: SIMD16<UInt8>, g: SIMD16<UInt8>, b: SIMD16<UInt8>) {
    let a0 = p.loadUnaligned(as: SIMD16<UInt8>.self)
    let a1 = p.loadUnaligned(fromByteOffset: 16, as: SIMD16<UInt8>.self)
    let a2 = p.loadUnaligned(fromByteOffset: 32, as: SIMD16<UInt8>.self)
    // R: byte 3k + 0 of pixel k.
    @inline(__always) func r0(_ v: SIMD16<UInt8>) -> SIMD16<UInt8> { SIMD16<UInt8>(v[0], v[6], v[12], 0, 0, 0, 0, 0, v[3], v[9], v[15], 0, 0, 0, 0, 0) }
    @inline(__always) func r1(_ v: SIMD16<UInt8>) -> SIMD16<UInt8> { SIMD16<UInt8>(0, 0, 0, v[2], v[8], v[14], 0, 0, 0, 0, 0, v[5], v[11], 0, 0, 0) }
    @inline(__always) func r2(_ v: SIMD16<UInt8>) -> SIMD16<UInt8> { SIMD16<UInt8>(0, 0, 0, 0, 0, 0, v[4], v[10], 0, 0, 0, 0, 0, v[1], v[7], v[13]) }
    // G: byte 3k + 1 of pixel k.
    @inline(__always) func g0(_ v: SIMD16<UInt8>) -> SIMD16<UInt8> { SIMD16<UInt8>(v[1], v[7], v[13], 0, 0, 0, 0, 0, v[4], v[10], 0, 0, 0, 0, 0, 0) }
    @inline(__always) func g1(_ v: SIMD16<UInt8>) -> SIMD16<UInt8> { SIMD16<UInt8>(0, 0, 0, v[3], v[9], v[15], 0, 0, 0, 0, v[0], v[6], v[12], 0, 0, 0) }
    @inline(__always) func g2(_ v: SIMD16<UInt8>) -> SIMD16<UInt8> { SIMD16<UInt8>(0, 0, 0, 0, 0, 0, v[5], v[11], 0, 0, 0, 0, 0, v[2], v[8], v[14]) }
    // B: byte 3k + 2 of pixel k.
    @inline(__always) func b0(_ v: SIMD16<UInt8>) -> SIMD16<UInt8> { SIMD16<UInt8>(v[2], v[8], v[14], 0, 0, 0, 0, 0, v[5], v[11], 0, 0, 0, 0, 0, 0) }
    @inline(__always) func b1(_ v: SIMD16<UInt8>) -> SIMD16<UInt8> { SIMD16<UInt8>(0, 0, 0, v[4], v[10], 0, 0, 0, 0, 0, v[1], v[7], v[13], 0, 0, 0) }
    @inline(__always) func b2(_ v: SIMD16<UInt8>) -> SIMD16<UInt8> { SIMD16<UInt8>(0, 0, 0, 0, 0, v[0], v[6], v[12], 0, 0, 0, 0, 0, v[3], v[9], v[15]) }
    return (r0(a0) | r1(a1) | r2(a2), g0(a0) | g1(a1) | g2(a2), b0(a0) | b1(a1) | b2(a2))
}

/// RGB24 → Y′CbCr 4:2:0, 8 chroma samples (16 × 2 luma samples) per step.
struct YUVForwardKernel: Sendable {
    var yr: Float, yg: Float, yb: Float, yo: Float
    // Chroma weights already divided by 8 (the [1 2 1] × [1 1] filter's sum).
    var ur: Float, ug: Float, ub: Float
    var vr: Float, vg: Float, vb: Float
    /// 2×2 block means (weights 2, 2 per row) instead of [1 2 1] (both sum to 8 over two rows).
    var box: Bool

    @inline(__always)
    private func channels(_ w: SIMD8<UInt32>) -> (SIMD8<Float>, SIMD8<Float>, SIMD8<Float>) {
        (SIMD8<Float>(unsafeBitCast(w & 0xFF, to: SIMD8<Int32>.self)),
         SIMD8<Float>(unsafeBitCast((w &>> 8) & 0xFF, to: SIMD8<Int32>.self)),
         SIMD8<Float>(unsafeBitCast((w &>> 16) & 0xFF, to: SIMD8<Int32>.self)))
    }

    /// Words of the 8 pixels at columns start, start+step, … (step 2 for chroma sites).
    @inline(__always)
    private func gather(_ row: UnsafePointer<UInt8>, _ x: Int, step: Int) -> SIMD8<UInt32> {
        SIMD8(pixelWord(row, x), pixelWord(row, x &+ step), pixelWord(row, x &+ 2 &* step), pixelWord(row, x &+ 3 &* step),
              pixelWord(row, x &+ 4 &* step), pixelWord(row, x &+ 5 &* step), pixelWord(row, x &+ 6 &* step), pixelWord(row, x &+ 7 &* step))
    }

    func rowPairs(_ pairs: Range<Int>, rgb: UnsafePointer<UInt8>, rgbStride: Int, yuv: PlanarYUV420View) {
        let w = yuv.width, h = yuv.height
        let cw = yuv.chromaWidth
        for j in pairs {
            let r0 = rgb + 2 * j * rgbStride
            let r1 = 2 * j + 1 < h ? r0 + rgbStride : r0   // odd height: the last row pairs with itself
            let y0 = yuv.y + 2 * j * yuv.yStride
            let y1 = y0 + yuv.yStride
            let hasSecond = 2 * j + 1 < h
            let uRow = yuv.u + j * yuv.uStride, vRow = yuv.v + j * yuv.vStride

            if box {
                boxRowPair(r0, r1, w, y0, y1, hasSecond, uRow, vRow)
                continue
            }
            // 16 × 2 pixels per step: the even and odd columns of both rows are gathered once and
            // serve luma and chroma; the chroma's left neighbours (column 2i − 1) are one more gather.
            // Word loads read one byte past a pixel, so the vector part keeps 2i + 17 < w, and it
            // starts at i = 1 (the left neighbour of column 0 is column 0 itself, done scalar).
            var i = 0
            let vectorStart = 1
            if cw > 0 { scalarPair(0, r0, r1, w, y0, y1, hasSecond, uRow, vRow) }
            i = vectorStart
            while 2 * i + 17 < w {
                let x = 2 * i
                let e0 = gather(r0, x, step: 2), o0 = gather(r0, x &+ 1, step: 2), l0 = gather(r0, x &- 1, step: 2)
                let e1 = gather(r1, x, step: 2), o1 = gather(r1, x &+ 1, step: 2), l1 = gather(r1, x &- 1, step: 2)
                let (er0, eg0, eb0) = channels(e0), (or0, og0, ob0) = channels(o0)
                let (er1, eg1, eb1) = channels(e1), (or1, og1, ob1) = channels(o1)
                storeLuma(lumaBits(er0, eg0, eb0), lumaBits(or0, og0, ob0), y0 + x)
                if hasSecond { storeLuma(lumaBits(er1, eg1, eb1), lumaBits(or1, og1, ob1), y1 + x) }
                // [1 2 1] across, [1 1] down (2×2 means take `boxRowPair` above).
                let (lr0, lg0, lb0) = channels(l0), (lr1, lg1, lb1) = channels(l1)
                let r = (lr0 + lr1) + 2 * (er0 + er1) + (or0 + or1)
                let g = (lg0 + lg1) + 2 * (eg0 + eg1) + (og0 + og1)
                let b = (lb0 + lb1) + 2 * (eb0 + eb1) + (ob0 + ob1)
                let u = ur * r + ug * g + ub * b + 128
                let v = vr * r + vg * g + vb * b + 128
                UnsafeMutableRawPointer(uRow + i).storeBytes(of: roundToBytes(u), as: SIMD8<UInt8>.self)
                UnsafeMutableRawPointer(vRow + i).storeBytes(of: roundToBytes(v), as: SIMD8<UInt8>.self)
                i += 8
            }
            while i < cw {
                scalarPair(i, r0, r1, w, y0, y1, hasSecond, uRow, vRow)
                i += 1
            }
        }
    }

    /// One pair of rows with 2×2 block means: 16 × 2 pixels a step, their channels by byte
    /// shuffles (`deinterleaveRGB16`), the same arithmetic as the gathering loop below.
    @inline(__always)
    private func boxRowPair(_ r0: UnsafePointer<UInt8>, _ r1: UnsafePointer<UInt8>, _ w: Int,
                            _ y0: UnsafeMutablePointer<UInt8>, _ y1: UnsafeMutablePointer<UInt8>, _ hasSecond: Bool,
                            _ uRow: UnsafeMutablePointer<UInt8>, _ vRow: UnsafeMutablePointer<UInt8>) {
        @inline(__always) func halves(_ v: SIMD16<UInt8>) -> (SIMD8<Float>, SIMD8<Float>) {
            (SIMD8<Float>(int32s(v.lowHalf)), SIMD8<Float>(int32s(v.highHalf)))
        }
        var x = 0
        while x + 16 <= w {
            let top = deinterleaveRGB16(UnsafeRawPointer(r0 + 3 * x)), bottom = deinterleaveRGB16(UnsafeRawPointer(r1 + 3 * x))
            let (er0, or0) = halves(top.r), (eg0, og0) = halves(top.g), (eb0, ob0) = halves(top.b)
            let (er1, or1) = halves(bottom.r), (eg1, og1) = halves(bottom.g), (eb1, ob1) = halves(bottom.b)
            storeLuma(lumaBits(er0, eg0, eb0), lumaBits(or0, og0, ob0), y0 + x)
            if hasSecond { storeLuma(lumaBits(er1, eg1, eb1), lumaBits(or1, og1, ob1), y1 + x) }
            let r = 2 * ((er0 + er1) + (or0 + or1))
            let g = 2 * ((eg0 + eg1) + (og0 + og1))
            let b = 2 * ((eb0 + eb1) + (ob0 + ob1))
            let i = x / 2
            UnsafeMutableRawPointer(uRow + i).storeBytes(of: roundToBytes(ur * r + ug * g + ub * b + 128), as: SIMD8<UInt8>.self)
            UnsafeMutableRawPointer(vRow + i).storeBytes(of: roundToBytes(vr * r + vg * g + vb * b + 128), as: SIMD8<UInt8>.self)
            x += 16
        }
        for i in (x / 2)..<((w + 1) / 2) { scalarPair(i, r0, r1, w, y0, y1, hasSecond, uRow, vRow) }
    }

    /// Luma of even and odd pixels, interleaved into 16 bytes.
    @inline(__always)
    private func storeLuma(_ even: SIMD8<UInt32>, _ odd: SIMD8<UInt32>, _ p: UnsafeMutablePointer<UInt8>) {
        let pairs = lowHalves(even | odd &<< 8)
        UnsafeMutableRawPointer(p).storeBytes(of: pairs, as: SIMD8<UInt16>.self)
    }

    @inline(__always)
    private func lumaBits(_ r: SIMD8<Float>, _ g: SIMD8<Float>, _ b: SIMD8<Float>) -> SIMD8<UInt32> {
        byteBits(yr * r + yg * g + yb * b + yo)
    }

    /// Chroma sample i and the luma of columns 2i, 2i + 1 of both rows, one at a time.
    private func scalarPair(_ i: Int, _ r0: UnsafePointer<UInt8>, _ r1: UnsafePointer<UInt8>, _ w: Int,
                            _ y0: UnsafeMutablePointer<UInt8>, _ y1: UnsafeMutablePointer<UInt8>, _ hasSecond: Bool,
                            _ uRow: UnsafeMutablePointer<UInt8>, _ vRow: UnsafeMutablePointer<UInt8>) {
        for x in (2 * i)..<min(2 * i + 2, w) {
            y0[x] = scalarLuma(pixelWordSafe(r0, x))
            if hasSecond { y1[x] = scalarLuma(pixelWordSafe(r1, x)) }
        }
        scalarChroma(i, r0, r1, w, uRow, vRow)
    }

    /// R, G, B of two rows' words summed, as floats.
    @inline(__always)
    private func sum(_ a: SIMD8<UInt32>, _ b: SIMD8<UInt32>) -> (SIMD8<Float>, SIMD8<Float>, SIMD8<Float>) {
        let (ar, ag, ab) = channels(a), (br, bg, bb) = channels(b)
        return (ar + br, ag + bg, ab + bb)
    }

    @inline(__always)
    private func scalarLuma(_ word: UInt32) -> UInt8 {
        let r = Float(word & 0xFF), g = Float((word >> 8) & 0xFF), b = Float((word >> 16) & 0xFF)
        return UInt8(min(max(yr * r + yg * g + yb * b + yo, 0), 255).rounded())
    }

    private func scalarChroma(_ i: Int, _ r0: UnsafePointer<UInt8>, _ r1: UnsafePointer<UInt8>, _ w: Int,
                              _ uRow: UnsafeMutablePointer<UInt8>, _ vRow: UnsafeMutablePointer<UInt8>) {
        var r: Float = 0, g: Float = 0, b: Float = 0
        @inline(__always) func add(_ x: Int, _ weight: Float) {
            let x = min(max(x, 0), w - 1)
            let w0 = pixelWordSafe(r0, x), w1 = pixelWordSafe(r1, x)
            r += weight * (Float(w0 & 0xFF) + Float(w1 & 0xFF))
            g += weight * (Float((w0 >> 8) & 0xFF) + Float((w1 >> 8) & 0xFF))
            b += weight * (Float((w0 >> 16) & 0xFF) + Float((w1 >> 16) & 0xFF))
        }
        if box {
            add(2 * i, 2); add(2 * i + 1, 2)
        } else {
            add(2 * i - 1, 1); add(2 * i, 2); add(2 * i + 1, 1)
        }
        uRow[i] = UInt8(min(max(ur * r + ug * g + ub * b + 128, 0), 255).rounded())
        vRow[i] = UInt8(min(max(vr * r + vg * g + vb * b + 128, 0), 255).rounded())
    }
}

/// Rounds to 0…255 and returns the integer in the low byte of each lane (the 2²³ trick).
@inline(__always)
func byteBits(_ value: SIMD8<Float>) -> SIMD8<UInt32> {
    var clamped = value.replacing(with: 0, where: value .< 0)
    clamped.replace(with: 255, where: clamped .> 255)
    return unsafeBitCast(clamped + 12_582_912, to: SIMD8<UInt32>.self) & 0xFF
}

/// Y′CbCr 4:2:0 → RGB24, 16 pixels per step.
struct YUVInverseKernel: Sendable {
    var a: Float, yo: Float, rCr: Float, gCb: Float, gCr: Float, bCb: Float

    /// R | G<<8 | B<<16 per lane.
    @inline(__always)
    private func pack(_ r: SIMD8<Float>, _ g: SIMD8<Float>, _ b: SIMD8<Float>) -> SIMD8<UInt32> {
        byteBits(r) | byteBits(g) &<< 8 | byteBits(b) &<< 16
    }

    func rowPairs(_ pairs: Range<Int>, yuv: PlanarYUV420View, rgb: UnsafeMutablePointer<UInt8>, rgbStride: Int,
                  scratch: UnsafeMutablePointer<Float>, scratchRow: Int) {
        let w = yuv.width, h = yuv.height
        let cw = yuv.chromaWidth, ch = yuv.chromaHeight
        // Chroma rows vertically interpolated for the upper (¾ this + ¼ above) and lower (¾ this + ¼ below)
        // luma row, centred on 128.
        let cbTop = scratch, crTop = scratch + scratchRow, cbBottom = scratch + 2 * scratchRow, crBottom = scratch + 3 * scratchRow
        for j in pairs {
            let above = max(j - 1, 0), below = min(j + 1, ch - 1)
            let u = UnsafePointer(yuv.u + j * yuv.uStride), v = UnsafePointer(yuv.v + j * yuv.vStride)
            let uA = UnsafePointer(yuv.u + above * yuv.uStride), vA = UnsafePointer(yuv.v + above * yuv.vStride)
            let uB = UnsafePointer(yuv.u + below * yuv.uStride), vB = UnsafePointer(yuv.v + below * yuv.vStride)
            var i = 0
            while i + 8 <= cw {
                let cu = loadFloats8(u + i), cv = loadFloats8(v + i)
                store8(0.75 * cu + 0.25 * loadFloats8(uA + i) - 128, cbTop + i)
                store8(0.75 * cv + 0.25 * loadFloats8(vA + i) - 128, crTop + i)
                store8(0.75 * cu + 0.25 * loadFloats8(uB + i) - 128, cbBottom + i)
                store8(0.75 * cv + 0.25 * loadFloats8(vB + i) - 128, crBottom + i)
                i += 8
            }
            while i < cw {
                let cu = Float(u[i]), cv = Float(v[i])
                cbTop[i] = 0.75 * cu + 0.25 * Float(uA[i]) - 128
                crTop[i] = 0.75 * cv + 0.25 * Float(vA[i]) - 128
                cbBottom[i] = 0.75 * cu + 0.25 * Float(uB[i]) - 128
                crBottom[i] = 0.75 * cv + 0.25 * Float(vB[i]) - 128
                i += 1
            }
            // The last chroma sample repeats to the right (clamp-to-edge for the odd column after it).
            cbTop[cw] = cbTop[cw - 1]; crTop[cw] = crTop[cw - 1]
            cbBottom[cw] = cbBottom[cw - 1]; crBottom[cw] = crBottom[cw - 1]
            row(yuv.y + 2 * j * yuv.yStride, cb: cbTop, cr: crTop, width: w, out: rgb + 2 * j * rgbStride)
            if 2 * j + 1 < h {
                row(yuv.y + (2 * j + 1) * yuv.yStride, cb: cbBottom, cr: crBottom, width: w, out: rgb + (2 * j + 1) * rgbStride)
            }
        }
    }

    @inline(__always)
    private func row(_ y: UnsafeMutablePointer<UInt8>, cb: UnsafeMutablePointer<Float>, cr: UnsafeMutablePointer<Float>,
                     width w: Int, out: UnsafeMutablePointer<UInt8>) {
        var x = 0
        // 16 pixels per step, even and odd columns apart: even pixels take chroma sample i, odd ones
        // the mean of i and i + 1, so no chroma interleaving is needed; 48 bytes stored exactly.
        while x + 16 <= w {
            let i = x / 2
            let pairs = UnsafeRawPointer(y + x).loadUnaligned(as: SIMD8<UInt16>.self)
            let yEven = a * (SIMD8<Float>(int32s(pairs & 0xFF)) - yo)
            let yOdd = a * (SIMD8<Float>(int32s(pairs &>> 8)) - yo)
            let cbEven = load8(cb + i), crEven = load8(cr + i)
            let cbOdd = 0.5 * (cbEven + load8(cb + i + 1)), crOdd = 0.5 * (crEven + load8(cr + i + 1))
            let even = pack(yEven + rCr * crEven, yEven + gCb * cbEven + gCr * crEven, yEven + bCb * cbEven)
            let odd = pack(yOdd + rCr * crOdd, yOdd + gCb * cbOdd + gCr * crOdd, yOdd + bCb * cbOdd)
            // Pixels 0…15 as words: even e_k = pixel 2k, odd o_k = pixel 2k + 1. Group g holds pixels
            // 4g…4g+3 = e_2g, o_2g, e_2g+1, o_2g+1; its 12 bytes are three words (lanes = groups).
            let p0 = SIMD4(even[0], even[2], even[4], even[6]), p1 = SIMD4(odd[0], odd[2], odd[4], odd[6])
            let p2 = SIMD4(even[1], even[3], even[5], even[7]), p3 = SIMD4(odd[1], odd[3], odd[5], odd[7])
            let w0 = p0 | p1 &<< 24, w1 = p1 &>> 8 | p2 &<< 16, w2 = p2 &>> 16 | p3 &<< 8
            let p = UnsafeMutableRawPointer(out + 3 * x)
            p.storeBytes(of: SIMD4(w0[0], w1[0], w2[0], w0[1]), as: SIMD4<UInt32>.self)
            p.storeBytes(of: SIMD4(w1[1], w2[1], w0[2], w1[2]), toByteOffset: 16, as: SIMD4<UInt32>.self)
            p.storeBytes(of: SIMD4(w2[2], w0[3], w1[3], w2[3]), toByteOffset: 32, as: SIMD4<UInt32>.self)
            x += 16
        }
        while x < w {
            let i = x / 2
            let cbv = x & 1 == 0 ? cb[i] : 0.5 * (cb[i] + cb[i + 1])
            let crv = x & 1 == 0 ? cr[i] : 0.5 * (cr[i] + cr[i + 1])
            let luma = a * (Float(y[x]) - yo)
            let rgb = SIMD4<Float>(luma + rCr * crv, luma + gCb * cbv + gCr * crv, luma + bCb * cbv, 0)
            let bytes = roundToBytes(SIMD8<Float>(lowHalf: rgb, highHalf: .zero))
            out[3 * x] = bytes[0]; out[3 * x + 1] = bytes[1]; out[3 * x + 2] = bytes[2]
            x += 1
        }
    }
}
