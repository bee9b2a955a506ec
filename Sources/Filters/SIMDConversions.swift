// Conversions between vector element types, written lane by lane so that LLVM sees one extension,
// pack or shuffle. The standard library's generic `SIMDn<T>(truncatingIfNeeded:)` between vector
// types is often left as a call in a large kernel (a call and a `vzeroupper` per vector: most of the
// RGB → 4:2:0 kernel's time once); these never are.

/// Each lane widened (zero-extended) to 32 bits.
@inline(__always) func int32s(_ v: SIMD8<UInt8>) -> SIMD8<Int32> {
    SIMD8<Int32>(Int32(v[0]), Int32(v[1]), Int32(v[2]), Int32(v[3]), Int32(v[4]), Int32(v[5]), Int32(v[6]), Int32(v[7]))
}

/// Each lane widened (zero-extended) to 32 bits.
@inline(__always) func int32s(_ v: SIMD8<UInt16>) -> SIMD8<Int32> {
    SIMD8<Int32>(Int32(v[0]), Int32(v[1]), Int32(v[2]), Int32(v[3]), Int32(v[4]), Int32(v[5]), Int32(v[6]), Int32(v[7]))
}

/// Each lane widened (zero-extended) to 32 bits.
@inline(__always) func int32s(_ v: SIMD16<UInt16>) -> SIMD16<Int32> {
    SIMD16<Int32>(Int32(v[0]), Int32(v[1]), Int32(v[2]), Int32(v[3]), Int32(v[4]), Int32(v[5]), Int32(v[6]), Int32(v[7]), Int32(v[8]), Int32(v[9]), Int32(v[10]), Int32(v[11]), Int32(v[12]), Int32(v[13]), Int32(v[14]), Int32(v[15]))
}

/// Each lane widened (zero-extended) to 32 bits.
@inline(__always) func uint32s(_ v: SIMD8<UInt8>) -> SIMD8<UInt32> {
    SIMD8<UInt32>(UInt32(v[0]), UInt32(v[1]), UInt32(v[2]), UInt32(v[3]), UInt32(v[4]), UInt32(v[5]), UInt32(v[6]), UInt32(v[7]))
}

/// Each lane widened (zero-extended) to 32 bits.
@inline(__always) func uint32s(_ v: SIMD16<UInt8>) -> SIMD16<UInt32> {
    SIMD16<UInt32>(UInt32(v[0]), UInt32(v[1]), UInt32(v[2]), UInt32(v[3]), UInt32(v[4]), UInt32(v[5]), UInt32(v[6]), UInt32(v[7]), UInt32(v[8]), UInt32(v[9]), UInt32(v[10]), UInt32(v[11]), UInt32(v[12]), UInt32(v[13]), UInt32(v[14]), UInt32(v[15]))
}

/// Each lane widened (zero-extended) to 16 bits.
@inline(__always) func uint16s(_ v: SIMD16<UInt8>) -> SIMD16<UInt16> {
    SIMD16<UInt16>(UInt16(v[0]), UInt16(v[1]), UInt16(v[2]), UInt16(v[3]), UInt16(v[4]), UInt16(v[5]), UInt16(v[6]), UInt16(v[7]), UInt16(v[8]), UInt16(v[9]), UInt16(v[10]), UInt16(v[11]), UInt16(v[12]), UInt16(v[13]), UInt16(v[14]), UInt16(v[15]))
}

/// Each lane's low byte.
@inline(__always) func lowBytes(_ v: SIMD8<UInt32>) -> SIMD8<UInt8> {
    SIMD8<UInt8>(UInt8(truncatingIfNeeded: v[0]), UInt8(truncatingIfNeeded: v[1]), UInt8(truncatingIfNeeded: v[2]), UInt8(truncatingIfNeeded: v[3]), UInt8(truncatingIfNeeded: v[4]), UInt8(truncatingIfNeeded: v[5]), UInt8(truncatingIfNeeded: v[6]), UInt8(truncatingIfNeeded: v[7]))
}

/// Each lane's low byte.
@inline(__always) func lowBytes(_ v: SIMD16<UInt32>) -> SIMD16<UInt8> {
    SIMD16<UInt8>(UInt8(truncatingIfNeeded: v[0]), UInt8(truncatingIfNeeded: v[1]), UInt8(truncatingIfNeeded: v[2]), UInt8(truncatingIfNeeded: v[3]), UInt8(truncatingIfNeeded: v[4]), UInt8(truncatingIfNeeded: v[5]), UInt8(truncatingIfNeeded: v[6]), UInt8(truncatingIfNeeded: v[7]), UInt8(truncatingIfNeeded: v[8]), UInt8(truncatingIfNeeded: v[9]), UInt8(truncatingIfNeeded: v[10]), UInt8(truncatingIfNeeded: v[11]), UInt8(truncatingIfNeeded: v[12]), UInt8(truncatingIfNeeded: v[13]), UInt8(truncatingIfNeeded: v[14]), UInt8(truncatingIfNeeded: v[15]))
}

/// Each lane's low byte, as one pack per half: in the plane scaler's loop the lane-by-lane form
/// (and `evenHalf` of the whole vector) compiled to one extract per lane (measured).
@inline(__always) func lowBytesByHalves(_ v: SIMD16<UInt16>) -> SIMD16<UInt8> {
    SIMD16(lowHalf: unsafeBitCast(v.lowHalf, to: SIMD16<UInt8>.self).evenHalf,
           highHalf: unsafeBitCast(v.highHalf, to: SIMD16<UInt8>.self).evenHalf)
}

/// Each lane's low 16 bits.
@inline(__always) func lowHalves(_ v: SIMD8<UInt32>) -> SIMD8<UInt16> {
    SIMD8<UInt16>(UInt16(truncatingIfNeeded: v[0]), UInt16(truncatingIfNeeded: v[1]), UInt16(truncatingIfNeeded: v[2]), UInt16(truncatingIfNeeded: v[3]), UInt16(truncatingIfNeeded: v[4]), UInt16(truncatingIfNeeded: v[5]), UInt16(truncatingIfNeeded: v[6]), UInt16(truncatingIfNeeded: v[7]))
}

/// Each lane's low 16 bits.
@inline(__always) func lowHalves(_ v: SIMD16<UInt32>) -> SIMD16<UInt16> {
    SIMD16<UInt16>(UInt16(truncatingIfNeeded: v[0]), UInt16(truncatingIfNeeded: v[1]), UInt16(truncatingIfNeeded: v[2]), UInt16(truncatingIfNeeded: v[3]), UInt16(truncatingIfNeeded: v[4]), UInt16(truncatingIfNeeded: v[5]), UInt16(truncatingIfNeeded: v[6]), UInt16(truncatingIfNeeded: v[7]), UInt16(truncatingIfNeeded: v[8]), UInt16(truncatingIfNeeded: v[9]), UInt16(truncatingIfNeeded: v[10]), UInt16(truncatingIfNeeded: v[11]), UInt16(truncatingIfNeeded: v[12]), UInt16(truncatingIfNeeded: v[13]), UInt16(truncatingIfNeeded: v[14]), UInt16(truncatingIfNeeded: v[15]))
}

/// Each lane as a Float.
@inline(__always) func floats(_ v: SIMD16<Int32>) -> SIMD16<Float> {
    SIMD16<Float>(Float(v[0]), Float(v[1]), Float(v[2]), Float(v[3]), Float(v[4]), Float(v[5]), Float(v[6]), Float(v[7]), Float(v[8]), Float(v[9]), Float(v[10]), Float(v[11]), Float(v[12]), Float(v[13]), Float(v[14]), Float(v[15]))
}

/// Each lane's low byte (in the decimated blur's interpolation 1.7× faster than `lowBytesByHalves`).
@inline(__always) func lowBytes(_ v: SIMD16<UInt16>) -> SIMD16<UInt8> {
    SIMD16<UInt8>(UInt8(truncatingIfNeeded: v[0]), UInt8(truncatingIfNeeded: v[1]), UInt8(truncatingIfNeeded: v[2]), UInt8(truncatingIfNeeded: v[3]), UInt8(truncatingIfNeeded: v[4]), UInt8(truncatingIfNeeded: v[5]), UInt8(truncatingIfNeeded: v[6]), UInt8(truncatingIfNeeded: v[7]), UInt8(truncatingIfNeeded: v[8]), UInt8(truncatingIfNeeded: v[9]), UInt8(truncatingIfNeeded: v[10]), UInt8(truncatingIfNeeded: v[11]), UInt8(truncatingIfNeeded: v[12]), UInt8(truncatingIfNeeded: v[13]), UInt8(truncatingIfNeeded: v[14]), UInt8(truncatingIfNeeded: v[15]))
}

/// Each lane clamped to 0...255, as bytes (signed compares and a pack: AVX2 has no unsigned
/// 16-bit compare, so the unsigned clamp cost a compare and a blend per bound).
@inline(__always) func saturatedBytes(_ v: SIMD16<Int16>) -> SIMD16<UInt8> {
    let zero = SIMD16<Int16>(repeating: 0), top = SIMD16<Int16>(repeating: 255)
    let c = v.replacing(with: zero, where: v .< zero).replacing(with: top, where: v .> top)
    return lowBytes(unsafeBitCast(c, to: SIMD16<UInt16>.self))
}

/// Rounds to 0…255 and returns the integer in the low byte of each lane (the 2²³ trick).
@inline(__always)
func byteBits(_ value: SIMD8<Float>) -> SIMD8<UInt32> {
    var clamped = value.replacing(with: 0, where: value .< 0)
    clamped.replace(with: 255, where: clamped .> 255)
    return unsafeBitCast(clamped + 12_582_912, to: SIMD8<UInt32>.self) & 0xFF
}
