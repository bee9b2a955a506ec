#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The math of the Gaussian blur: kernel weights and pure row/column kernels. Scheduling (bands,
// threads, scratch) lives in GaussianBlur.swift.

/// Normalised taps w[0...R] of a sampled Gaussian, R = ceil(radiusFactor·σ): w0 + 2·Σ w_k = 1.
func gaussianTaps(sigma: Double, radiusFactor: Double = 4) -> [Float] {
    let radius = max(1, Int((radiusFactor * sigma).rounded(.up)))
    let raw = (0...radius).map { k in exp(-Double(k * k) / (2 * sigma * sigma)) }
    let total = raw[0] + 2 * raw.dropFirst().reduce(0, +)
    return raw.map { Float($0 / total) }
}

/// A view of an 8-bit region: `width` pixels of `channels` interleaved samples (3 for RGB, 1 for
/// one plane of a Y′CbCr picture) by `height` rows, rows `stride` bytes apart.
struct PixelRegion: @unchecked Sendable {
    var base: UnsafeMutablePointer<UInt8>
    var width: Int
    var height: Int
    var stride: Int
    var channels: Int

    init(_ image: RGBImage, _ rect: PixelRect) {
        base = image.row(rect.y) + 3 * rect.x
        width = rect.width
        height = rect.height
        stride = image.bytesPerRow
        channels = 3
    }

    init(_ plane: Plane, _ rect: PixelRect) {
        base = plane.base + rect.y * plane.stride + rect.x
        width = rect.width
        height = rect.height
        stride = plane.stride
        channels = 1
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
    return lowBytes(unsafeBitCast(shifted, to: SIMD8<UInt32>.self))
}

@inline(__always)
func roundToBytes16(_ value: SIMD16<Float>) -> SIMD16<UInt8> {
    var clamped = value.replacing(with: 0, where: value .< 0)
    clamped.replace(with: 255, where: clamped .> 255)
    return lowBytes(unsafeBitCast(clamped + 12_582_912, to: SIMD16<UInt32>.self))
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

/// 16 bytes as floats, lane by lane so it inlines: in the plane scaler the generic SIMD conversion
/// stayed a call and took most of the time (measured). Elsewhere the generic form measured as fast.
@inline(__always)
func floats16(_ p: UnsafePointer<UInt8>) -> SIMD16<Float> {
    let bytes = UnsafeRawPointer(p).loadUnaligned(as: SIMD16<UInt8>.self)
    var result = SIMD16<Float>()
    for i in 0..<16 { result[i] = Float(bytes[i]) }
    return result
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
        let ch = source.channels
        let samples = ch * w
        taps.withUnsafeBufferPointer { taps in
            for y in rows {
                let s = source.row(y)
                // Row with R edge pixels repeated on both sides.
                var j = 0
                while j + 16 <= samples {
                    store16(SIMD16<Float>(UnsafeRawPointer(s + j).loadUnaligned(as: SIMD16<UInt8>.self)), padded + (ch &* radius &+ j))
                    j &+= 16
                }
                while j < samples { padded[ch &* radius &+ j] = Float(s[j]); j &+= 1 }
                for k in 0..<radius {
                    for c in 0..<ch {
                        padded[ch &* k &+ c] = Float(s[c])
                        padded[ch &* (radius &+ w &+ k) &+ c] = Float(s[ch &* (w &- 1) &+ c])
                    }
                }
                let out = plane.row(y)
                let center = UnsafePointer(padded + ch &* radius)
                var i = 0
                while i < samples {
                    let c = center + i
                    var acc = taps[0] * load16(c)
                    var k = 1, offset = ch
                    while k <= radius {
                        acc += taps[k] * (load16(c - offset) + load16(c + offset))
                        k &+= 1
                        offset &+= ch
                    }
                    store16(acc, out + i)
                    i &+= 16
                }
            }
        }
    }
}

extension FIRBlurKernel {
    /// Both passes for destination rows `rows`, with the horizontally filtered rows kept in a ring of
    /// 2R + 1 float rows (`ring`, rows `ringStride` floats apart) that stays in the cache: each
    /// source row is filtered once per band, and no full-frame float plane is written or read.
    static func fused(rows: Range<Int>, source: PixelRegion, destination: PixelRegion, taps: [Float],
                      padded: UnsafeMutablePointer<Float>, ring: UnsafeMutablePointer<Float>, ringStride: Int) {
        let radius = taps.count - 1
        let size = 2 * radius + 1
        let h = source.height
        let samples = destination.channels * destination.width
        var next = max(0, rows.lowerBound - radius)   // next source row to filter horizontally
        taps.withUnsafeBufferPointer { weights in
        withUnsafeTemporaryAllocation(of: UnsafePointer<Float>.self, capacity: 2 * radius + 2) { pointers in
            let above = pointers.baseAddress!, below = above + radius + 1
            @inline(__always) func slot(_ row: Int) -> UnsafeMutablePointer<Float> { ring + (row % size) * ringStride }
            for y in rows {
                while next <= min(h - 1, y + radius) {
                    // A one-row plane with stride 0: row(next) is the ring slot.
                    horizontal(rows: next..<(next + 1), source: source, plane: FloatPlane(base: slot(next), stride: 0),
                               taps: taps, padded: padded)
                    next += 1
                }
                for k in 1...radius {
                    above[k] = UnsafePointer(slot(max(y - k, 0)))
                    below[k] = UnsafePointer(slot(min(y + k, h - 1)))
                }
                let out = destination.row(y)
                let centre = UnsafePointer(slot(y))
                var i = 0
                while i < samples {
                    var acc = weights[0] * load16(centre + i)
                    var k = 1
                    while k <= radius {
                        acc += weights[k] * (load16(above[k] + i) + load16(below[k] + i))
                        k &+= 1
                    }
                    let count = min(16, samples &- i)
                    if count == 16 {
                        UnsafeMutableRawPointer(out + i).storeBytes(of: roundToBytes16(acc), as: SIMD16<UInt8>.self)
                    } else {
                        storeBytes8(acc.lowHalf, to: out + i, count: min(8, count))
                        if count > 8 { storeBytes8(acc.highHalf, to: out + i + 8, count: count &- 8) }
                    }
                    i &+= 16
                }
            }
        }
        }
    }
}
