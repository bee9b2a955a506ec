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
