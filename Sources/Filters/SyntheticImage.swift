/// Deterministic test pictures.
public enum SyntheticImage {
    /// Natural-looking content: multi-octave smooth colour noise, hard-edged shapes, striped and
    /// checkered textures and a little per-pixel grain. The same `seed` and size always give the
    /// same pixels; the content of a pixel depends on its position, not on the frame size.
    public static func natural(width: Int, height: Int, seed: UInt64 = 1) -> RGBImage {
        let image = RGBImage(width: width, height: height)
        let shapes = Shape.make(count: 24, width: width, height: height, seed: seed)
        let bands = Parallel.bandCount(for: height, minimumPerBand: 16)
        Parallel.forEachBand(of: height, bands: bands) { _, rows in
            for y in rows {
                let p = image.row(y)
                for x in 0..<width {
                    var rgb = background(x: x, y: y, seed: seed)
                    for shape in shapes where shape.contains(x: x, y: y) {
                        rgb = shape.colour(x: x, y: y, under: rgb)
                    }
                    // Fine grain, ±6.
                    let grain = Float(hash(UInt64(x), UInt64(y), seed &+ 99) % 13) - 6
                    rgb += SIMD3(repeating: grain)
                    let clamped = rgb.clamped(lowerBound: SIMD3(repeating: 0), upperBound: SIMD3(repeating: 255))
                    p[3 * x] = UInt8(clamped.x.rounded())
                    p[3 * x + 1] = UInt8(clamped.y.rounded())
                    p[3 * x + 2] = UInt8(clamped.z.rounded())
                }
            }
        }
        return image
    }

    /// A 1-pixel checkerboard of black and white.
    public static func checkerboard(width: Int, height: Int) -> RGBImage {
        let image = RGBImage(width: width, height: height)
        for y in 0..<height {
            let p = image.row(y)
            for x in 0..<width where (x + y) & 1 == 0 {
                p[3 * x] = 255; p[3 * x + 1] = 255; p[3 * x + 2] = 255
            }
        }
        return image
    }

    private static func background(x: Int, y: Int, seed: UInt64) -> SIMD3<Float> {
        var luma: Float = 0
        var amplitude: Float = 70
        var cell = 320
        for octave in 0..<5 {
            luma += amplitude * (valueNoise(x: x, y: y, cell: cell, seed: seed &+ UInt64(octave)) - 0.5) * 2
            amplitude *= 0.5
            cell /= 3
        }
        let u = (valueNoise(x: x, y: y, cell: 200, seed: seed &+ 17) - 0.5) * 120
        let v = (valueNoise(x: x, y: y, cell: 150, seed: seed &+ 23) - 0.5) * 120
        let l = 120 + luma
        return SIMD3(l + v, l - 0.3 * u - 0.5 * v, l + u)
    }

    /// Smoothly interpolated lattice noise in 0...1 with cells of `cell` pixels.
    private static func valueNoise(x: Int, y: Int, cell: Int, seed: UInt64) -> Float {
        let cell = max(cell, 1)
        let gx = x / cell, gy = y / cell
        let fx = smooth(Float(x - gx * cell) / Float(cell))
        let fy = smooth(Float(y - gy * cell) / Float(cell))
        func lattice(_ i: Int, _ j: Int) -> Float {
            Float(hash(UInt64(bitPattern: Int64(i)), UInt64(bitPattern: Int64(j)), seed) & 0xFFFF) / 65535
        }
        let top = lattice(gx, gy) * (1 - fx) + lattice(gx + 1, gy) * fx
        let bottom = lattice(gx, gy + 1) * (1 - fx) + lattice(gx + 1, gy + 1) * fx
        return top * (1 - fy) + bottom * fy
    }

    private static func smooth(_ t: Float) -> Float { t * t * (3 - 2 * t) }

    static func hash(_ a: UInt64, _ b: UInt64, _ seed: UInt64) -> UInt64 {
        var z = a &* 0x9E37_79B9_7F4A_7C15 ^ (b &+ 0x632B_E59B_D9B4_E019) &* 0xBF58_476D_1CE4_E5B9 ^ seed &* 0x94D0_49BB_1331_11EB
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private struct Shape: Sendable {
        enum Kind { case rectangle, disc, stripes, checker }
        var kind: Kind
        var x0: Int, y0: Int, x1: Int, y1: Int
        var colour: SIMD3<Float>
        var period: Int

        static func make(count: Int, width: Int, height: Int, seed: UInt64) -> [Shape] {
            (0..<count).map { i in
                func r(_ k: UInt64) -> Int { Int(hash(UInt64(i), k, seed &+ 7) % 1_000_000) }
                let w = max(2, width * (5 + r(1) % 25) / 100), h = max(2, height * (5 + r(2) % 25) / 100)
                let x0 = r(3) % max(1, width), y0 = r(4) % max(1, height)
                let kinds: [Kind] = [.rectangle, .disc, .stripes, .checker]
                return Shape(kind: kinds[r(5) % 4], x0: x0, y0: y0, x1: x0 + w, y1: y0 + h,
                             colour: SIMD3(Float(r(6) % 256), Float(r(7) % 256), Float(r(8) % 256)),
                             period: 1 + r(9) % 5)
            }
        }

        func contains(x: Int, y: Int) -> Bool {
            guard x >= x0, x < x1, y >= y0, y < y1 else { return false }
            if kind == .disc {
                let cx = Double(x0 + x1) / 2, cy = Double(y0 + y1) / 2
                let rx = Double(x1 - x0) / 2, ry = Double(y1 - y0) / 2
                let dx = (Double(x) - cx) / rx, dy = (Double(y) - cy) / ry
                return dx * dx + dy * dy <= 1
            }
            return true
        }

        func colour(x: Int, y: Int, under: SIMD3<Float>) -> SIMD3<Float> {
            switch kind {
            case .rectangle, .disc: colour
            case .stripes: ((x + y) / period) % 2 == 0 ? colour : under * 0.6
            case .checker: ((x / period) + (y / period)) % 2 == 0 ? colour : SIMD3(255, 255, 255) - colour
            }
        }
    }
}
