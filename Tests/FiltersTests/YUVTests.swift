import CFFmpeg
import FilterReferences
import Filters
import Foundation
import Testing

/// Three planes in Swift arrays, for the converter's raw-pointer API.
final class Planes {
    let width: Int, height: Int
    let storage: UnsafeMutablePointer<UInt8>
    let view: PlanarYUV420View
    init(width: Int, height: Int) {
        self.width = width
        self.height = height
        let yStride = width + 7, cStride = (width + 1) / 2 + 5   // deliberately not multiples of 16
        let ch = (height + 1) / 2
        let count = yStride * height + 2 * cStride * ch
        storage = .allocate(capacity: count)
        storage.initialize(repeating: 0, count: count)
        view = PlanarYUV420View(width: width, height: height, y: storage, yStride: yStride,
                                u: storage + yStride * height, uStride: cStride,
                                v: storage + yStride * height + cStride * ch, vStride: cStride)
    }
    deinit { storage.deallocate() }
}

/// The same formulas in double precision, written out plainly.
enum YUVReference {
    static func coefficients(_ m: YUVMatrix, _ r: YUVRange) -> (ys: Double, yo: Double, cs: Double, kr: Double, kg: Double, kb: Double) {
        let kr = m.kr, kb = m.kb
        return r == .limited ? (219.0 / 255, 16, 224.0 / 255, kr, 1 - kr - kb, kb) : (1, 0, 1, kr, 1 - kr - kb, kb)
    }

    static func clampRound(_ x: Double) -> Int { Int(min(max(x, 0), 255).rounded()) }

    /// Y per pixel; Cb/Cr at even columns from rows 2j, 2j+1 averaged and columns 2i−1, 2i, 2i+1 weighted 1 2 1 (edges repeated).
    static func forward(_ image: RGBImage, _ m: YUVMatrix, _ r: YUVRange, box: Bool = false) -> (y: [Int], u: [Int], v: [Int]) {
        let c = coefficients(m, r)
        let w = image.width, h = image.height, cw = (w + 1) / 2, ch = (h + 1) / 2
        func px(_ x: Int, _ y: Int) -> (Double, Double, Double) {
            let p = image[min(max(x, 0), w - 1), min(max(y, 0), h - 1)]
            return (Double(p.r), Double(p.g), Double(p.b))
        }
        var ys = [Int](), us = [Int](), vs = [Int]()
        for y in 0..<h {
            for x in 0..<w {
                let (R, G, B) = px(x, y)
                ys.append(clampRound(c.ys * (c.kr * R + c.kg * G + c.kb * B) + c.yo))
            }
        }
        for j in 0..<ch {
            for i in 0..<cw {
                var R = 0.0, G = 0.0, B = 0.0
                for (dx, wt) in box ? [(0, 2.0), (1, 2.0)] : [(-1, 1.0), (0, 2.0), (1, 1.0)] {
                    for dy in 0...1 {
                        let (r0, g0, b0) = px(2 * i + dx, 2 * j + dy)
                        R += wt * r0 / 8; G += wt * g0 / 8; B += wt * b0 / 8
                    }
                }
                let Y = c.kr * R + c.kg * G + c.kb * B
                us.append(clampRound(c.cs * (B - Y) / (2 * (1 - c.kb)) + 128))
                vs.append(clampRound(c.cs * (R - Y) / (2 * (1 - c.kr)) + 128))
            }
        }
        return (ys, us, vs)
    }

    /// Bilinear chroma at left-sited positions, then the inverse matrix.
    static func inverse(_ p: PlanarYUV420View, _ m: YUVMatrix, _ r: YUVRange) -> [Int] {
        let c = coefficients(m, r)
        let w = p.width, h = p.height, cw = p.chromaWidth, ch = p.chromaHeight
        func chroma(_ plane: UnsafeMutablePointer<UInt8>, _ stride: Int, _ x: Int, _ y: Int) -> Double {
            // Vertical: chroma row j sits at luma y = 2j + 0.5; horizontal: chroma i at luma x = 2i.
            func at(_ i: Int, _ j: Int) -> Double { Double(plane[min(max(j, 0), ch - 1) * stride + min(max(i, 0), cw - 1)]) }
            func column(_ i: Int) -> Double {
                let j = y / 2
                return y % 2 == 0 ? 0.75 * at(i, j) + 0.25 * at(i, j - 1) : 0.75 * at(i, j) + 0.25 * at(i, j + 1)
            }
            return x % 2 == 0 ? column(x / 2) : 0.5 * (column(x / 2) + column(x / 2 + 1))
        }
        var out = [Int]()
        for y in 0..<h {
            for x in 0..<w {
                let Y = (Double(p.y[y * p.yStride + x]) - c.yo) / c.ys
                let pb = (chroma(p.u, p.uStride, x, y) - 128) / c.cs, pr = (chroma(p.v, p.vStride, x, y) - 128) / c.cs
                let R = Y + 2 * (1 - c.kr) * pr
                let B = Y + 2 * (1 - c.kb) * pb
                let G = (Y - c.kr * R - c.kb * B) / c.kg
                out += [clampRound(R), clampRound(G), clampRound(B)]
            }
        }
        return out
    }
}

@Suite struct YUVTests {
    static let sizes = [FrameSize(641, 359), FrameSize(64, 36), FrameSize(17, 3)]

    @Test(arguments: YUVMatrix.allCases, YUVRange.allCases)
    func forwardWithinOneOfDoubleReference(matrix: YUVMatrix, range: YUVRange) {
        // Both chroma modes: left-sited [1 2 1], and the 2×2 box the pipeline uses.
        for size in Self.sizes {
          for mode in [YUVConverter.ChromaDownsampling.leftSited, .box] {
            let image = Images.natural(size.width, size.height, seed: 7)
            let planes = Planes(width: size.width, height: size.height)
            YUVConverter(matrix: matrix, range: range, downsampling: mode).rgbToYUV420(image, into: planes.view)
            let reference = YUVReference.forward(image, matrix, range, box: mode == .box)
            let v = planes.view
            var worst = 0
            for y in 0..<size.height { for x in 0..<size.width { worst = max(worst, abs(Int(v.y[y * v.yStride + x]) - reference.y[y * size.width + x])) } }
            for j in 0..<v.chromaHeight {
                for i in 0..<v.chromaWidth {
                    worst = max(worst, abs(Int(v.u[j * v.uStride + i]) - reference.u[j * v.chromaWidth + i]))
                    worst = max(worst, abs(Int(v.v[j * v.vStride + i]) - reference.v[j * v.chromaWidth + i]))
                }
            }
            #expect(worst <= 1, "\(matrix) \(range) \(mode) \(size): worst \(worst)")
          }
        }
    }

    @Test(arguments: YUVMatrix.allCases, YUVRange.allCases)
    func inverseWithinOneOfDoubleReference(matrix: YUVMatrix, range: YUVRange) {
        for size in Self.sizes {
            let image = Images.natural(size.width, size.height, seed: 8)
            let planes = Planes(width: size.width, height: size.height)
            let converter = YUVConverter(matrix: matrix, range: range)
            converter.rgbToYUV420(image, into: planes.view)
            let out = RGBImage(width: size.width, height: size.height)
            converter.yuv420ToRGB(planes.view, into: out)
            let reference = YUVReference.inverse(planes.view, matrix, range)
            let ours = out.packedBytes()
            let worst = zip(ours, reference).map { abs(Int($0) - $1) }.max() ?? 0
            #expect(worst <= 1, "\(matrix) \(range) \(size): worst \(worst)")
        }
    }

    @Test func greysAndPrimariesHitTheNominalCodes() {
        let image = RGBImage(width: 4, height: 2)
        image.fill(r: 255, g: 255, b: 255)
        let planes = Planes(width: 4, height: 2)
        YUVConverter(matrix: .bt709, range: .limited).rgbToYUV420(image, into: planes.view)
        #expect(planes.view.y[0] == 235 && planes.view.u[0] == 128 && planes.view.v[0] == 128)
        image.fill(r: 0, g: 0, b: 0)
        YUVConverter(matrix: .bt709, range: .full).rgbToYUV420(image, into: planes.view)
        #expect(planes.view.y[0] == 0 && planes.view.u[0] == 128)
        image.fill(r: 0, g: 0, b: 255)
        YUVConverter(matrix: .bt601, range: .limited).rgbToYUV420(image, into: planes.view)
        #expect(planes.view.u[0] == 240)
    }

    /// Against libswscale with the same matrix and range, left chroma siting and an area filter
    /// (which at 2:1 is our [1 2 1]/4 × [1 1]/2), full-resolution chroma input.
    @Test(arguments: YUVMatrix.allCases, YUVRange.allCases)
    func matchesLibswscale(matrix: YUVMatrix, range: YUVRange) throws {
        let image = Images.natural(1280, 720, seed: 2)
        let planes = Planes(width: image.width, height: image.height)
        let converter = YUVConverter(matrix: matrix, range: range)
        converter.rgbToYUV420(image, into: planes.view)
        let swsMatrix: Int32 = switch matrix {
        case .bt601: SWS_CS_ITU601
        case .bt709: SWS_CS_ITU709
        case .bt2020: SWS_CS_BT2020
        }
        var frame = av_frame_alloc()
        defer { av_frame_free(&frame) }
        frame!.pointee.width = Int32(image.width); frame!.pointee.height = Int32(image.height)
        frame!.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        #expect(av_frame_get_buffer(frame, 64) >= 0)
        let forward = try SwsTestContext(source: AV_PIX_FMT_RGB24, destination: AV_PIX_FMT_YUV420P, size: image.size,
                                         flags: Int32(SWS_AREA) | Int32(SWS_FULL_CHR_H_INP) | Int32(SWS_ACCURATE_RND),
                                         matrix: swsMatrix, full: range == .full, chromaSiting: "dst")
        _ = lf_sws_scale_from_packed(forward.pointer, image.baseAddress, Int32(image.bytesPerRow), Int32(image.height), frame)
        let f = frame!
        let theirs = PlanarYUV420View(width: image.width, height: image.height,
                                      y: lf_frame_data(f, 0), yStride: Int(lf_frame_linesize(f, 0)),
                                      u: lf_frame_data(f, 1), uStride: Int(lf_frame_linesize(f, 1)),
                                      v: lf_frame_data(f, 2), vStride: Int(lf_frame_linesize(f, 2)))
        let ours = planes.view
        let qy = planePSNR(ours.y, ours.yStride, theirs.y, theirs.yStride, ours.width, ours.height)
        let qu = planePSNR(ours.u, ours.uStride, theirs.u, theirs.uStride, ours.chromaWidth, ours.chromaHeight)
        let qv = planePSNR(ours.v, ours.vStride, theirs.v, theirs.vStride, ours.chromaWidth, ours.chromaHeight)
        #expect(qy >= 45 && qu >= 45 && qv >= 45, "\(matrix) \(range) RGB→YUV vs libswscale: Y \(qy) U \(qu) V \(qv) dB")

        // Back to RGB from libswscale's planes, both ways. libswscale's same-size yuv420p → rgb24
        // path upsamples chroma by repetition whatever the flags, so its reference goes through
        // yuv444p: bilinear, left-sited chroma upsampling first, then the matrix alone.
        let back = RGBImage(size: image.size)
        converter.yuv420ToRGB(theirs, into: back)
        var full444 = av_frame_alloc()
        defer { av_frame_free(&full444) }
        full444!.pointee.width = Int32(image.width); full444!.pointee.height = Int32(image.height)
        full444!.pointee.format = AV_PIX_FMT_YUV444P.rawValue
        #expect(av_frame_get_buffer(full444, 64) >= 0)
        let upsample = try SwsTestContext(source: AV_PIX_FMT_YUV420P, destination: AV_PIX_FMT_YUV444P, size: image.size,
                                          flags: Int32(SWS_BILINEAR) | Int32(SWS_ACCURATE_RND),
                                          matrix: swsMatrix, full: range == .full, chromaSiting: "src")
        _ = lf_sws_scale_frames(upsample.pointer, frame, full444)
        let inverse = try SwsTestContext(source: AV_PIX_FMT_YUV444P, destination: AV_PIX_FMT_RGB24, size: image.size,
                                         flags: Int32(SWS_BILINEAR) | Int32(SWS_FULL_CHR_H_INT) | Int32(SWS_ACCURATE_RND),
                                         matrix: swsMatrix, full: range == .full, chromaSiting: nil)
        let reference = RGBImage(size: image.size)
        _ = lf_sws_scale_to_packed(inverse.pointer, full444, reference.baseAddress, Int32(reference.bytesPerRow))
        let q = psnr(back, reference)
        #expect(q >= 45, "\(matrix) \(range) YUV→RGB vs libswscale: \(q) dB")
    }
}

func planePSNR(_ a: UnsafeMutablePointer<UInt8>, _ aStride: Int, _ b: UnsafeMutablePointer<UInt8>, _ bStride: Int, _ w: Int, _ h: Int) -> Double {
    var squared = 0.0
    for y in 0..<h { for x in 0..<w { let d = Double(a[y * aStride + x]) - Double(b[y * bStride + x]); squared += d * d } }
    return squared == 0 ? .infinity : 10 * log10(255 * 255 / (squared / Double(w * h)))
}

/// A libswscale context with matrix, range and H.264 "left" chroma siting set.
final class SwsTestContext {
    let pointer: OpaquePointer
    init(source: AVPixelFormat, destination: AVPixelFormat, size: FrameSize, flags: Int32, matrix: Int32, full: Bool,
         chromaSiting side: String?) throws {
        guard let ctx = sws_alloc_context() else { throw Oracle.Failure(description: "sws_alloc_context") }
        let raw = UnsafeMutableRawPointer(ctx)
        av_opt_set_int(raw, "srcw", Int64(size.width), 0)
        av_opt_set_int(raw, "srch", Int64(size.height), 0)
        av_opt_set_int(raw, "src_format", Int64(source.rawValue), 0)
        av_opt_set_int(raw, "dstw", Int64(size.width), 0)
        av_opt_set_int(raw, "dsth", Int64(size.height), 0)
        av_opt_set_int(raw, "dst_format", Int64(destination.rawValue), 0)
        av_opt_set_int(raw, "sws_flags", Int64(flags), 0)
        // Chroma position in 1/256 luma sample: x 0 (co-sited with even columns), y 128 (between rows).
        if let side {
            av_opt_set_int(raw, "\(side)_h_chr_pos", 0, 0)
            av_opt_set_int(raw, "\(side)_v_chr_pos", 128, 0)
        }
        guard sws_init_context(ctx, nil, nil) >= 0 else {
            sws_freeContext(ctx)
            throw Oracle.Failure(description: "sws_init_context")
        }
        pointer = ctx
        let coefficients = sws_getCoefficients(matrix)
        let sourceFull = source == AV_PIX_FMT_RGB24 ? true : full
        let destinationFull = destination == AV_PIX_FMT_RGB24 ? true : full
        sws_setColorspaceDetails(ctx, coefficients, sourceFull ? 1 : 0, coefficients, destinationFull ? 1 : 0, 0, 1 << 16, 1 << 16)
    }
    deinit { sws_freeContext(pointer) }
}
