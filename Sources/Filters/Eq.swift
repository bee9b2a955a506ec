#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// Brightness, contrast, saturation and gamma: ffmpeg's `eq`, whose meaning is tables on the
/// 8-bit Y′, Cb and Cr codes of limited-range video. Here the picture is RGB, so the meaning is
/// stated on its BT.709 limited-range Y′CbCr: luma through `eq`'s luma table, each chroma
/// through its chroma table, back to RGB.
///
/// On the decoded planes of a BT.709 limited-range stream that is literally `eq`: a table per
/// plane, libavfilter's to the bit (`PlanarFilter`). On RGB each pixel's luma and chroma are
/// continuous, so the tables are read between their entries (linearly) and only the change is
/// added back: a neutral `eq` leaves RGB exactly as it was.
public struct Eq: Filter, Hashable {
    public static let brightnessRange: ClosedRange<Double> = -1...1
    public static let contrastRange: ClosedRange<Double> = -1000...1000
    public static let saturationRange: ClosedRange<Double> = 0...3
    public static let gammaRange: ClosedRange<Double> = 0.1...10

    public var brightness: Double
    public var contrast: Double
    public var saturation: Double
    public var gamma: Double

    public init(brightness: Double = 0, contrast: Double = 1, saturation: Double = 1, gamma: Double = 1) {
        (self.brightness, self.contrast, self.saturation, self.gamma) = (brightness, contrast, saturation, gamma)
    }

    public var description: String {
        var parts = ["eq"]
        if brightness != 0 { parts.append("brightness=\(formatNumber(brightness))") }
        if contrast != 1 { parts.append("contrast=\(formatNumber(contrast))") }
        if saturation != 1 { parts.append("saturation=\(formatNumber(saturation))") }
        if gamma != 1 { parts.append("gamma=\(formatNumber(gamma))") }
        return parts.joined(separator: " ")
    }

    public func outputSize(for input: FrameSize) throws(FilterError) -> FrameSize {
        guard Self.brightnessRange.contains(brightness), Self.contrastRange.contains(contrast),
              Self.saturationRange.contains(saturation), Self.gammaRange.contains(gamma) else {
            throw .invalidGeometry(filter: description, reason: "brightness −1…1, contrast −1000…1000, saturation 0…3, gamma 0.1…10")
        }
        return input
    }

    public func makeRenderer(for input: FrameSize) throws(FilterError) -> any FilterRenderer {
        _ = try outputSize(for: input)
        return EqRenderer(tables: tables, size: input)
    }

    /// The luma table and the chroma table, as libavfilter's `eq` computes them.
    var tables: (luma: [UInt8], chroma: [UInt8]) {
        (Self.table(brightness: brightness, contrast: contrast, gamma: gamma),
         Self.table(brightness: 0, contrast: saturation, gamma: 1))
    }

    /// One plane's table. libavfilter runs a plane through one of three things: nothing (neutral),
    /// its fixed-point brightness/contrast routine (gamma 1, |contrast| < 8), or a table built in
    /// double precision; each is a function of the 8-bit code, so one table holds any of them.
    static func table(brightness: Double, contrast: Double, gamma: Double) -> [UInt8] {
        // libavfilter clips each parameter with av_clipf, i.e. through a Float: -0.2 arrives as
        // -0.200000003, and its fixed-point brightness truncates 79.9999997 to 79, not 80.
        let brightness = Double(Float(brightness)), contrast = Double(Float(contrast)), gamma = Double(Float(gamma))
        if contrast == 1, brightness == 0, gamma == 1 { return (0...255).map { UInt8($0) } }
        if gamma == 1, abs(contrast) < 8 {
            let c = Int(contrast * 256 * 16)
            let b = (Int(100 * brightness + 100) * 511) / 200 - 128 - c / 32
            return (0...255).map { code in
                let pel = ((code * c) >> 12) + b
                return UInt8(pel < 0 ? 0 : pel > 255 ? 255 : pel)
            }
        }
        let g = 1 / gamma
        return (0...255).map { code in
            var v = contrast * (Double(code) / 255 - 0.5) + 0.5 + brightness
            if v <= 0 { return 0 }
            v = pow(v, g)  // gamma_weight 1, eq's default
            return v >= 1 ? 255 : UInt8(256 * v)
        }
    }
}

private final class EqRenderer: FilterRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let bands: Int
    /// Change of each table at each code, and between codes (the slope), as floats.
    private let lumaDelta = ScratchBuffer<Float>(count: 257, zero: 0), chromaDelta = ScratchBuffer<Float>(count: 257, zero: 0)

    init(tables: (luma: [UInt8], chroma: [UInt8]), size: FrameSize) {
        inputSize = size
        bands = Parallel.bandCount(for: size.height, minimumPerBand: 32)
        for code in 0...256 {
            let c = min(code, 255)
            lumaDelta.base[code] = Float(Int(tables.luma[c]) - c)
            chromaDelta.base[code] = Float(Int(tables.chroma[c]) - c)
        }
    }

    /// The table's change at a continuous code, read linearly between entries.
    @inline(__always) private static func change(_ table: UnsafeMutablePointer<Float>, _ code: Float) -> Float {
        let c = max(0, min(255, code))
        let i = Int(c), f = c - Float(i)
        return table[i] + (table[i + 1] - table[i]) * f
    }

    func render(_ source: RGBImage, into destination: RGBImage) {
        let width = inputSize.width
        // BT.709 limited range: Y = 16 + 219/255·(Kr R + Kg G + Kb B), Cb = 128 + 224/255·(B − y)/1.8556, Cr likewise.
        let kr: Float = 0.2126, kb: Float = 0.0722, kg: Float = 1 - kr - kb
        let ys: Float = 219.0 / 255, cs: Float = 224.0 / 255
        let cbScale = cs / (2 * (1 - kb)), crScale = cs / (2 * (1 - kr))
        // Back: ΔR = ΔY/ys + 2(1 − Kr)/cs·ΔCr; ΔG = ΔY/ys − …; ΔB = ΔY/ys + 2(1 − Kb)/cs·ΔCb.
        let ay = 1 / ys, rCr = 2 * (1 - kr) / cs, bCb = 2 * (1 - kb) / cs
        let gCb = -2 * (1 - kb) * kb / kg / cs, gCr = -2 * (1 - kr) * kr / kg / cs
        let lumaTable = lumaDelta, chromaTable = chromaDelta
        Parallel.forEachBand(of: inputSize.height, bands: bands) { _, rows in
            let lt = lumaTable.base, ct = chromaTable.base
            for y in rows {
                let s = source.row(y), d = destination.row(y)
                for x in 0..<width {
                    let p = 3 * x
                    let r = Float(s[p]), g = Float(s[p + 1]), b = Float(s[p + 2])
                    let luma = kr * r + kg * g + kb * b
                    let dy = Self.change(lt, 16 + ys * luma) * ay
                    let dcb = Self.change(ct, 128 + cbScale * (b - luma))
                    let dcr = Self.change(ct, 128 + crScale * (r - luma))
                    d[p] = clampRound(r + dy + rCr * dcr)
                    d[p + 1] = clampRound(g + dy + gCb * dcb + gCr * dcr)
                    d[p + 2] = clampRound(b + dy + bCb * dcb)
                }
            }
        }
    }
}

@inline(__always) private func clampRound(_ v: Float) -> UInt8 {
    UInt8(max(0, min(255, v + 0.5)))
}

extension Eq: PlanarFilter {
    /// On the planes only when they are BT.709 limited range, the Y′CbCr `eq`'s meaning is stated on.
    public func makePlaneRenderer(picture: FrameSize, role: PlaneRole, color: YUVConverter) -> (any PlaneRenderer)? {
        guard color.matrix == .bt709, color.range == .limited else { return nil }
        let tables = tables
        return PlaneTableRenderer(size: picture.shifted(by: role.shift), table: role == .luma ? tables.luma : tables.chroma)
    }
}

/// Each sample through a 256-entry table.
final class PlaneTableRenderer: PlaneRenderer {
    let inputSize: FrameSize
    var outputSize: FrameSize { inputSize }
    private let table = ScratchBuffer<UInt8>(count: 256, zero: 0)
    private let bands: Int

    init(size: FrameSize, table: [UInt8]) {
        inputSize = size
        for (i, v) in table.enumerated() { self.table.base[i] = v }
        bands = Parallel.bandCount(for: size.height, minimumPerBand: 64)
    }

    func render(_ source: Plane, into destination: Plane) {
        let width = source.width, table = table
        Parallel.forEachBand(of: source.height, bands: bands) { _, rows in
            let lut = table.base
            for y in rows {
                let s = source.row(y), d = destination.row(y)
                for x in 0..<width { d[x] = lut[Int(s[x])] }
            }
        }
    }
}
