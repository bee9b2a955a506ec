#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Filters

// Double-precision references and PSNR shared by the filter tests and `livefilter-bench`:
// the independent oracles the fast kernels are judged against. Not part of the product.

/// Peak signal-to-noise ratio in dB of two equally sized images (infinity when identical).
public func psnr(_ a: RGBImage, _ b: RGBImage) -> Double {
    guard a.size == b.size else { return .nan }
    return psnrPlane(a.baseAddress, a.bytesPerRow, b.baseAddress, b.bytesPerRow, width: 3 * a.width, height: a.height)
}

public func psnrPlane(_ a: UnsafePointer<UInt8>, _ aStride: Int, _ b: UnsafePointer<UInt8>, _ bStride: Int, width: Int, height: Int) -> Double {
    var squared = 0.0
    for y in 0..<height {
        let p = a + y * aStride, q = b + y * bStride
        var row = 0
        for i in 0..<width {
            let d = Int(p[i]) - Int(q[i])
            row += d * d
        }
        squared += Double(row)
    }
    if squared == 0 { return .infinity }
    return 10 * log10(255 * 255 / (squared / Double(width * height)))
}

/// A high-quality reference downscale: separable Lanczos-3 in double precision, its support widened
/// by the reduction factor (so it is a proper low-pass), pixel centres aligned, edges clamped.
public func lanczos3Reference(_ image: RGBImage, to size: FrameSize) -> RGBImage {
    func weights(source: Int, destination: Int) -> [[(Int, Double)]] {
        let scale = Double(source) / Double(destination)
        let stretch = max(1, scale)
        return (0..<destination).map { i in
            let centre = (Double(i) + 0.5) * scale - 0.5
            let support = 3 * stretch
            var row: [(Int, Double)] = []
            var j = Int((centre - support).rounded(.up))
            while Double(j) <= centre + support {
                let x = (Double(j) - centre) / stretch
                let w: Double
                if x == 0 { w = 1 } else if abs(x) >= 3 { w = 0 } else {
                    w = 3 * sin(Double.pi * x) * sin(Double.pi * x / 3) / (Double.pi * Double.pi * x * x)
                }
                if w != 0 { row.append((min(max(j, 0), source - 1), w)) }
                j += 1
            }
            let total = row.reduce(0) { $0 + $1.1 }
            return row.map { ($0.0, $0.1 / total) }
        }
    }
    let horizontal = weights(source: image.width, destination: size.width)
    let vertical = weights(source: image.height, destination: size.height)
    let middleWidth = 3 * size.width
    let middle = UnsafeMutableBufferPointer<Double>.allocate(capacity: middleWidth * image.height)
    defer { middle.deallocate() }
    nonisolated(unsafe) let m = middle.baseAddress!
    DispatchQueue.concurrentPerform(iterations: image.height) { y in
        let row = image.row(y)
        for x in 0..<size.width {
            for c in 0..<3 {
                var sum = 0.0
                for (j, w) in horizontal[x] { sum += w * Double(row[3 * j + c]) }
                m[y * middleWidth + 3 * x + c] = sum
            }
        }
    }
    let result = RGBImage(size: size)
    DispatchQueue.concurrentPerform(iterations: size.height) { y in
        let out = result.row(y)
        for i in 0..<middleWidth {
            var sum = 0.0
            for (j, w) in vertical[y] { sum += w * m[j * middleWidth + i] }
            out[i] = UInt8(min(max(sum.rounded(), 0), 255))
        }
    }
    return result
}

/// Exact separable Gaussian in double precision, clamp-to-edge, radius ⌈5σ⌉, normalised.
public func exactGaussian(_ image: RGBImage, sigma: Double) -> RGBImage {
    let w = image.width, h = image.height
    let radius = Int((5 * sigma).rounded(.up))
    var kernel = (0...radius).map { exp(-Double($0 * $0) / (2 * sigma * sigma)) }
    let total = kernel[0] + 2 * kernel.dropFirst().reduce(0, +)
    kernel = kernel.map { $0 / total }
    let k = kernel
    let middle = UnsafeMutableBufferPointer<Double>.allocate(capacity: w * h * 3)
    defer { middle.deallocate() }
    nonisolated(unsafe) let m = middle.baseAddress!
    DispatchQueue.concurrentPerform(iterations: h) { y in
        let row = image.row(y)
        for x in 0..<w {
            for c in 0..<3 {
                var sum = k[0] * Double(row[3 * x + c])
                for j in 1...radius {
                    sum += k[j] * (Double(row[3 * max(x - j, 0) + c]) + Double(row[3 * min(x + j, w - 1) + c]))
                }
                m[(y * w + x) * 3 + c] = sum
            }
        }
    }
    let result = RGBImage(width: w, height: h)
    DispatchQueue.concurrentPerform(iterations: h) { y in
        let out = result.row(y)
        for i in 0..<(3 * w) {
            var sum = k[0] * m[y * w * 3 + i]
            for j in 1...radius {
                sum += k[j] * (m[max(y - j, 0) * w * 3 + i] + m[min(y + j, h - 1) * w * 3 + i])
            }
            out[i] = UInt8(min(max(sum.rounded(), 0), 255))
        }
    }
    return result
}
