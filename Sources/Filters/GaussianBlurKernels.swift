#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The math of the Gaussian blur: kernel weights and pure row/column kernels. Scheduling (bands,
// threads, scratch) lives in GaussianBlur.swift.

/// Normalised taps w[0...R] of a sampled Gaussian, R = ceil(4σ): w0 + 2·Σ w_k = 1.
func gaussianTaps(sigma: Double) -> [Float] {
    let radius = max(1, Int((4 * sigma).rounded(.up)))
    let raw = (0...radius).map { k in exp(-Double(k * k) / (2 * sigma * sigma)) }
    let total = raw[0] + 2 * raw.dropFirst().reduce(0, +)
    return raw.map { Float($0 / total) }
}

/// Deriche's 4th-order recursive Gaussian (coefficients of Farnebäck & Westin, as tabulated by
/// Getreuer, "A Survey of Gaussian Convolution Algorithms", IPOL 2013), split into two
/// second-order sections per direction for float32 stability:
///
///     causal:      y[n] = b0·x[n]   + b1·x[n-1] − a1·y[n-1] − a2·y[n-2]
///     anticausal:  y[n] = c1·x[n+1] + c2·x[n+2] − a1·y[n+1] − a2·y[n+2]
///
/// and the blur is the sum of both directions over both sections (parallel form). Because each
/// direction only sees the input on its own side, starting every section in its steady state for
/// the edge pixel is exactly clamp-to-edge.
struct DericheSections: Sendable {
    struct Section: Sendable {
        var a1: Float, a2: Float, b0: Float, b1: Float, c1: Float, c2: Float
        /// Output of each direction for a constant input of 1 (the steady state).
        var causalGain: Float, anticausalGain: Float
    }

    var first: Section
    var second: Section

    init(sigma: Double) {
        // h(t) = Σ (a cos(ω t/σ) + b sin(ω t/σ)) e^{-λ t/σ} ≈ exp(-t²/2σ²).
        let terms: [(a: Double, b: Double, lambda: Double, omega: Double)] = [
            (1.6797292232361107, 3.7348298269103580, 1.7831906544515104, 0.6318113174569493),
            (-0.6802783501806897, -0.2598300478959625, 1.7228297663338028, 1.9969276832487770),
        ]
        // Each term is 2·Re(α rⁿ) with α = (a − i b)/2 and pole r = e^{(−λ + iω)/σ}.
        var sections: [(a1: Double, a2: Double, b0: Double, b1: Double, c1: Double, c2: Double)] = []
        var total = 0.0  // Σ over all n of the sampled kernel, to normalise
        for term in terms {
            let alpha = C(re: term.a / 2, im: -term.b / 2)
            let magnitude = exp(-term.lambda / sigma), angle = term.omega / sigma
            let r = C(re: magnitude * cos(angle), im: magnitude * sin(angle))
            let rConj = C(re: r.re, im: -r.im)
            let modulus2 = r.re * r.re + r.im * r.im
            let b0 = 2 * alpha.re
            let b1 = -2 * (alpha * rConj).re
            let c1 = 2 * (alpha * r).re
            let c2 = -2 * modulus2 * alpha.re
            sections.append((a1: -2 * r.re, a2: modulus2, b0: b0, b1: b1, c1: c1, c2: c2))
            // h(0) + 2 Σ_{n≥1} h(n) for this term.
            let tail = (alpha * r) / C(re: 1 - r.re, im: -r.im)
            total += b0 + 2 * 2 * tail.re
        }
        func make(_ s: (a1: Double, a2: Double, b0: Double, b1: Double, c1: Double, c2: Double)) -> Section {
            let n = 1 / total
            let denominator = 1 + s.a1 + s.a2
            return Section(a1: Float(s.a1), a2: Float(s.a2), b0: Float(s.b0 * n), b1: Float(s.b1 * n),
                           c1: Float(s.c1 * n), c2: Float(s.c2 * n),
                           causalGain: Float((s.b0 + s.b1) * n / denominator),
                           anticausalGain: Float((s.c1 + s.c2) * n / denominator))
        }
        first = make(sections[0])
        second = make(sections[1])
    }
}

/// A complex number, just enough for the pole arithmetic above.
private struct C {
    var re: Double, im: Double
    static func * (l: C, r: C) -> C { C(re: l.re * r.re - l.im * r.im, im: l.re * r.im + l.im * r.re) }
    static func / (l: C, r: C) -> C {
        let d = r.re * r.re + r.im * r.im
        return C(re: (l.re * r.re + l.im * r.im) / d, im: (l.im * r.re - l.re * r.im) / d)
    }
}

/// A view of an 8-bit RGB region: `width` pixels by `height` rows, rows `stride` bytes apart.
struct PixelRegion: @unchecked Sendable {
    var base: UnsafeMutablePointer<UInt8>
    var width: Int
    var height: Int
    var stride: Int

    init(_ image: RGBImage, _ rect: PixelRect) {
        base = image.row(rect.y) + 3 * rect.x
        width = rect.width
        height = rect.height
        stride = image.bytesPerRow
    }

    @inline(__always) func row(_ y: Int) -> UnsafeMutablePointer<UInt8> { base + y * stride }
}

/// A float plane of `height` rows of 3·width samples, rows `stride` floats apart.
struct FloatPlane: @unchecked Sendable {
    var base: UnsafeMutablePointer<Float>
    var stride: Int
    @inline(__always) func row(_ y: Int) -> UnsafeMutablePointer<Float> { base + y * stride }
}

/// Rounds to the nearest integer in 0...255. Adding 1.5·2²³ puts the rounded integer in the low
/// mantissa bits (the generic `SIMD8<Int32>(_:rounding:)` is scalar and many times slower).
@inline(__always)
func roundToBytes(_ value: SIMD8<Float>) -> SIMD8<UInt8> {
    var clamped = value.replacing(with: 0, where: value .< 0)
    clamped.replace(with: 255, where: clamped .> 255)
    let shifted = clamped + 12_582_912
    return SIMD8<UInt8>(truncatingIfNeeded: unsafeBitCast(shifted, to: SIMD8<UInt32>.self))
}

@inline(__always)
func roundToBytes16(_ value: SIMD16<Float>) -> SIMD16<UInt8> {
    var clamped = value.replacing(with: 0, where: value .< 0)
    clamped.replace(with: 255, where: clamped .> 255)
    return SIMD16<UInt8>(truncatingIfNeeded: unsafeBitCast(clamped + 12_582_912, to: SIMD16<UInt32>.self))
}

@inline(__always)
func storeBytes8(_ value: SIMD8<Float>, to p: UnsafeMutablePointer<UInt8>, count: Int) {
    let bytes = roundToBytes(value)
    if count == 8 {
        UnsafeMutableRawPointer(p).storeBytes(of: bytes, as: SIMD8<UInt8>.self)
    } else {
        for i in 0..<count { p[i] = bytes[i] }
    }
}

@inline(__always)
func loadFloats8(_ p: UnsafePointer<UInt8>) -> SIMD8<Float> {
    SIMD8<Float>(UnsafeRawPointer(p).loadUnaligned(as: SIMD8<UInt8>.self))
}

@inline(__always)
func load8(_ p: UnsafePointer<Float>) -> SIMD8<Float> {
    UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Float>.self)
}

@inline(__always)
func load16(_ p: UnsafePointer<Float>) -> SIMD16<Float> {
    UnsafeRawPointer(p).loadUnaligned(as: SIMD16<Float>.self)
}

@inline(__always)
func store16(_ v: SIMD16<Float>, _ p: UnsafeMutablePointer<Float>) {
    UnsafeMutableRawPointer(p).storeBytes(of: v, as: SIMD16<Float>.self)
}

@inline(__always)
func store8(_ v: SIMD8<Float>, _ p: UnsafeMutablePointer<Float>) {
    UnsafeMutableRawPointer(p).storeBytes(of: v, as: SIMD8<Float>.self)
}

enum FIRBlurKernel {
    /// Horizontal pass of rows `rows`: 8-bit `source` → float `plane`, clamp-to-edge.
    /// `padded` holds 3·(width + 2R) + 32 floats.
    static func horizontal(rows: Range<Int>, source: PixelRegion, plane: FloatPlane, taps: [Float],
                           padded: UnsafeMutablePointer<Float>) {
        let radius = taps.count - 1
        let w = source.width
        let samples = 3 * w
        taps.withUnsafeBufferPointer { taps in
            for y in rows {
                let s = source.row(y)
                // Row with R edge pixels repeated on both sides.
                for i in 0..<samples { padded[3 &* radius &+ i] = Float(s[i]) }
                for k in 0..<radius {
                    for c in 0..<3 {
                        padded[3 &* k &+ c] = Float(s[c])
                        padded[3 &* (radius &+ w &+ k) &+ c] = Float(s[3 &* (w &- 1) &+ c])
                    }
                }
                let out = plane.row(y)
                let center = UnsafePointer(padded + 3 &* radius)
                var i = 0
                while i < samples {
                    let c = center + i
                    var acc = taps[0] * load16(c)
                    var k = 1, offset = 3
                    while k <= radius {
                        acc += taps[k] * (load16(c - offset) + load16(c + offset))
                        k &+= 1
                        offset &+= 3
                    }
                    store16(acc, out + i)
                    i &+= 16
                }
            }
        }
    }

    /// Vertical pass producing destination rows `rows` from the float plane, clamp-to-edge.
    static func vertical(rows: Range<Int>, plane: FloatPlane, destination: PixelRegion, taps: [Float]) {
        let radius = taps.count - 1
        let h = destination.height
        let samples = 3 * destination.width
        taps.withUnsafeBufferPointer { taps in
        withUnsafeTemporaryAllocation(of: UnsafePointer<Float>.self, capacity: 2 * radius + 2) { pointers in
            let above = pointers.baseAddress!, below = above + radius + 1
            for y in rows {
                // The rows each tap reads, clamped to the edge once per output row.
                for k in 1...radius {
                    above[k] = UnsafePointer(plane.row(max(y - k, 0)))
                    below[k] = UnsafePointer(plane.row(min(y + k, h - 1)))
                }
                let out = destination.row(y)
                let center = UnsafePointer(plane.row(y))
                var i = 0
                while i < samples {
                    var acc = taps[0] * load16(center + i)
                    var k = 1
                    while k <= radius {
                        acc += taps[k] * (load16(above[k] + i) + load16(below[k] + i))
                        k &+= 1
                    }
                    let count = min(16, samples &- i)
                    storeBytes8(acc.lowHalf, to: out + i, count: min(8, count))
                    if count > 8 { storeBytes8(acc.highHalf, to: out + i + 8, count: count &- 8) }
                    i &+= 16
                }
            }
        }
        }
    }
}

enum RecursiveBlurKernel {
    /// Horizontal pass over rows `rows`, two rows at a time: lanes 0–3 hold R, G, B, 0 of the first
    /// row and lanes 4–7 those of the second. `lanes` and `sums` hold `width` vectors each.
    static func horizontal(rows: Range<Int>, source: PixelRegion, plane: FloatPlane, sections: DericheSections,
                           lanes: UnsafeMutablePointer<SIMD8<Float>>, sums: UnsafeMutablePointer<SIMD8<Float>>) {
        let w = source.width
        let s0 = sections.first, s1 = sections.second
        var y = rows.lowerBound
        while y < rows.upperBound {
            let pair = y + 1 < rows.upperBound
            let r0 = source.row(y), r1 = source.row(pair ? y + 1 : y)
            var p = UnsafePointer(r0), q = UnsafePointer(r1)
            for x in 0..<w {
                lanes[x] = SIMD8(Float(p[0]), Float(p[1]), Float(p[2]), 0, Float(q[0]), Float(q[1]), Float(q[2]), 0)
                p += 3
                q += 3
            }
            recurse(lanes: lanes, sums: sums, count: w, s0: s0, s1: s1, step: 1)
            // Spill each pixel as four floats, left to right: the fourth lands on the next pixel,
            // which is written next; the plane's row padding absorbs the last one.
            let o0 = plane.row(y), o1 = plane.row(pair ? y + 1 : y)
            var a = o0, b = o1
            for x in 0..<w {
                let v = sums[x]
                UnsafeMutableRawPointer(a).storeBytes(of: v.lowHalf, as: SIMD4<Float>.self)
                UnsafeMutableRawPointer(b).storeBytes(of: v.highHalf, as: SIMD4<Float>.self)  // o1 == o0 when unpaired: rewritten next
                a += 3
                b += 3
            }
            y += 2
        }
    }

    /// Causal then anticausal recursion along `count` vectors `step` apart; `sums` gets the blur.
    @inline(__always)
    static func recurse(lanes: UnsafeMutablePointer<SIMD8<Float>>, sums: UnsafeMutablePointer<SIMD8<Float>>,
                        count: Int, s0: DericheSections.Section, s1: DericheSections.Section, step: Int) {
        // Causal, started in the steady state of the first sample (clamp-to-edge on the left).
        var xPrevious = lanes[0]
        var p1 = xPrevious * s0.causalGain, p2 = p1
        var q1 = xPrevious * s1.causalGain, q2 = q1
        for n in 0..<count {
            let x = lanes[n]
            let p = (s0.b0 * x + s0.b1 * xPrevious - s0.a2 * p2) - s0.a1 * p1
            let q = (s1.b0 * x + s1.b1 * xPrevious - s1.a2 * q2) - s1.a1 * q1
            sums[n] = p + q
            p2 = p1; p1 = p; q2 = q1; q1 = q; xPrevious = x
        }
        // Anticausal, started in the steady state of the last sample (clamp-to-edge on the right).
        var x1 = lanes[count - 1], x2 = x1
        p1 = x1 * s0.anticausalGain; p2 = p1
        q1 = x1 * s1.anticausalGain; q2 = q1
        var n = count - 1
        while n >= 0 {
            let p = (s0.c1 * x1 + s0.c2 * x2 - s0.a2 * p2) - s0.a1 * p1
            let q = (s1.c1 * x1 + s1.c2 * x2 - s1.a2 * q2) - s1.a1 * q1
            sums[n] += p + q
            p2 = p1; p1 = p; q2 = q1; q1 = q
            x2 = x1; x1 = lanes[n]
            n -= 1
        }
    }

    /// Vertical pass over 16-float column strips `strips` of the plane (one cache line each),
    /// writing 8-bit output. `column` holds `height` vectors.
    static func vertical(strips: Range<Int>, plane: FloatPlane, destination: PixelRegion,
                         sections: DericheSections, column: UnsafeMutablePointer<SIMD16<Float>>) {
        let h = destination.height
        let samples = 3 * destination.width
        let s0 = sections.first, s1 = sections.second
        for strip in strips {
            let offset = 16 * strip
            let count = min(16, samples - offset)
            let stride = plane.stride
            var input = UnsafePointer(plane.row(0) + offset)
            var xPrevious = load16(input)
            var p1 = xPrevious * s0.causalGain, p2 = p1
            var q1 = xPrevious * s1.causalGain, q2 = q1
            for n in 0..<h {
                let x = load16(input)
                input += stride
                let p = (s0.b0 * x + s0.b1 * xPrevious - s0.a2 * p2) - s0.a1 * p1
                let q = (s1.b0 * x + s1.b1 * xPrevious - s1.a2 * q2) - s1.a1 * q1
                column[n] = p + q
                p2 = p1; p1 = p; q2 = q1; q1 = q; xPrevious = x
            }
            input -= stride
            var output = destination.row(h - 1) + offset
            let outputStride = destination.stride
            var x1 = load16(input), x2 = x1
            p1 = x1 * s0.anticausalGain; p2 = p1
            q1 = x1 * s1.anticausalGain; q2 = q1
            var n = h - 1
            while n >= 0 {
                let p = (s0.c1 * x1 + s0.c2 * x2 - s0.a2 * p2) - s0.a1 * p1
                let q = (s1.c1 * x1 + s1.c2 * x2 - s1.a2 * q2) - s1.a1 * q1
                let sum = column[n] + p + q
                if count == 16 {
                    UnsafeMutableRawPointer(output).storeBytes(of: roundToBytes16(sum), as: SIMD16<UInt8>.self)
                } else {
                    storeBytes8(sum.lowHalf, to: output, count: min(8, count))
                    if count > 8 { storeBytes8(sum.highHalf, to: output + 8, count: count - 8) }
                }
                p2 = p1; p1 = p; q2 = q1; q1 = q
                x2 = x1; x1 = load16(input)
                input -= stride
                output -= outputStride
                n &-= 1
            }
        }
    }
}
