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
