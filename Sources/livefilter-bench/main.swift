import Foundation
// livefilter-bench: Swift filter kernels against libavfilter / libswscale on the same frames, in
// the same process. Usage: livefilter-bench [--quick] [--only TEXT] [--threads 1|2|both] [--runs N]
// [--blur-quality] [--fused-probe [--band N]] [--cold]
// --cold: before each timed run, write 96 MB elsewhere so the frames come out of this core's caches,
// as the decoder's pictures do in the pipeline.
#if canImport(Glibc)
import Glibc
#endif
import CFFmpeg
import Dispatch
import FilterReferences
import Filters
import MediaIO

nonisolated(unsafe) let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    return arguments[i + 1]
}
nonisolated(unsafe) let quick = arguments.contains("--quick")
let only = option("--only")
let runs = Int(option("--runs") ?? "") ?? (quick ? 9 : 31)
let warmups = quick ? 1 : 3
let threadModes: [Int] = switch option("--threads") {
case "1": [1]
case "2": [2]
default: [1, 2]
}

lf_log_quiet(AV_LOG_ERROR)

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

nonisolated(unsafe) var lastMinimum = 0.0

nonisolated(unsafe) let coldBuffer: UnsafeMutableRawBufferPointer? = arguments.contains("--cold")
    ? UnsafeMutableRawBufferPointer.allocate(byteCount: 96 << 20, alignment: 64) : nil

/// Median milliseconds of `runs` calls after `warmups` untimed ones (the fastest run goes to `lastMinimum`).
func measure(_ body: () throws -> Void) rethrows -> Double {
    for _ in 0..<warmups { try body() }
    var times: [Double] = []
    for run in 0..<runs {
        if let coldBuffer { memset(coldBuffer.baseAddress!, Int32(run & 255), coldBuffer.count) }
        let start = now()
        try body()
        times.append(Double(now() - start) / 1e6)
    }
    times.sort()
    lastMinimum = times[0]
    return times[times.count / 2]
}

func loadAverage() -> String {
    var loads = [Double](repeating: 0, count: 3)
    _ = getloadavg(&loads, 3)
    return loads.map { String(format1($0)) }.joined(separator: " ")
}

func format1(_ x: Double) -> String { x.isFinite ? String(Double(Int((x * 10).rounded())) / 10) : (x > 0 ? "inf" : "-") }
func format2(_ x: Double) -> String { x.isFinite ? String(Double(Int((x * 100).rounded())) / 100) : "-" }
func pad(_ s: String, _ n: Int, left: Bool = false) -> String {
    s.count >= n ? s : (left ? s + String(repeating: " ", count: n - s.count) : String(repeating: " ", count: n - s.count) + s)
}

// MARK: Memory-bandwidth floor

/// Copy rate (bytes copied per second) of memcpy over a 256 MiB buffer, on `threads` threads.
func copyRate(threads: Int) -> Double {
    let count = 256 << 20
    let a = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 64)
    let b = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 64)
    defer { a.deallocate(); b.deallocate() }
    memset(a, 1, count); memset(b, 2, count)
    nonisolated(unsafe) let source = a, destination = b
    let ms = measure {
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            let lower = count * t / threads, upper = count * (t + 1) / threads
            memcpy(destination + lower, source + lower, upper - lower)
        }
    }
    return Double(count) / (ms / 1000)
}

// MARK: Cases

struct Result {
    var kernel: String
    var size: String
    var threads: Int
    var ours: Double
    var oursMin: Double
    var theirs: Double?
    var theirsName: String
    var pixels: Int
    var traffic: Int   // bytes read + written by an ideal single pass
    var quality: String
}

final class Case {
    let kernel: String
    let size: String
    let theirsName: String
    let pixels: Int
    let traffic: Int
    /// Prepares the two sides for a thread count and returns (ours, theirs, quality).
    let prepare: (Int) throws -> (() throws -> Void, (() throws -> Void)?, () -> String)

    init(_ kernel: String, _ size: String, theirs: String, pixels: Int, traffic: Int,
         prepare: @escaping (Int) throws -> (() throws -> Void, (() throws -> Void)?, () -> String)) {
        self.kernel = kernel; self.size = size; self.theirsName = theirs
        self.pixels = pixels; self.traffic = traffic; self.prepare = prepare
    }
}

print("livefilter-bench: \(quick ? "quick, " : "")median of \(runs) runs after \(warmups) warm-up(s); load average at start \(loadAverage())")
let full = SyntheticImage.natural(width: 1920, height: 1080)
let hd = SyntheticImage.natural(width: 1280, height: 720)
let images: [(String, RGBImage)] = [("1920x1080", full), ("1280x720", hd)]

/// A filter of ours against a libavfilter graph on the same frame.
func filterCase(_ kernel: String, _ filter: any Filter, graph: String, label: String, image: RGBImage,
                quality: ((RGBImage, RGBImage) -> String)? = nil) -> Case {
    let out = (try? filter.outputSize(for: image.size)) ?? image.size
    return Case(kernel, label, theirs: graph, pixels: image.width * image.height,
                traffic: 3 * (image.width * image.height + out.width * out.height)) { threads in
        Parallel.workerCount = threads == 1 ? 1 : 0
        let renderer = try filter.makeRenderer(for: image.size)
        let output = RGBImage(size: renderer.outputSize)
        let runner = try FilterGraphRunner(graph, image: image, threads: threads)
        return ({ renderer.render(image, into: output) }, { try runner.run() }, {
            let reference = runner.result()
            if let quality { return quality(output, reference) }
            let value = psnr(output, reference)
            return value.isNaN ? "sizes \(output.size) vs \(reference.size)" : "PSNR vs theirs \(format1(value)) dB"
        })
    }
}

/// Issue 14's compositing filters and a region, with the libavfilter graph that does the same job:
/// a 256x128 logo (alpha gradient), a text line with a box, a privacy blur on 4 % and 25 % of the
/// frame (ffmpeg: split, crop, gblur, overlay back).
func overlayCases() -> [(String, any Filter, String)] {
    var out: [(String, any Filter, String)] = []
    let logo = "/tmp/livefilter-bench-logo.png"
    if !FileManager.default.fileExists(atPath: logo) {
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-v", "error", "-y", "-f", "lavfi", "-i", "nullsrc=s=256x128", "-vf",
                            "format=rgba,geq=r='X':g='255-Y':b=128:a='mod(X+Y\\,256)'", "-frames:v", "1", logo]
        try? ffmpeg.run()
        ffmpeg.waitUntilExit()
    }
    if let chain = try? FilterChain(parsing: "overlay \(logo) x=right-16 y=top+16"), let overlay = chain.filters.first {
        out.append(("overlay 256x128", overlay, "movie=\(logo)[logo];[in][logo]overlay=x=W-w-16:y=16"))
    }
    let font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
    if let chain = try? FilterChain(parsing: "text \"00:00:01.500 · frame 45\" x=16 y=16 size=48 box=#000000@0.5 font=\(font)"),
       let text = chain.filters.first {
        out.append(("text 48px + box", text,
                    "drawtext=fontfile=\(font):text='00\\:00\\:01.500 · frame 45':x=16:y=16:fontsize=48:fontcolor=white:box=1:boxcolor=black@0.5:boxborderw=12"))
    }
    for (name, w, h) in [("4 %", 384, 216), ("25 %", 960, 540)] {
        if let chain = try? FilterChain(parsing: "blur sigma=14 region=480,270,\(w),\(h)"), let region = chain.filters.first {
            out.append(("blur 14 region \(name)", region,
                        "split[a][b];[b]crop=\(w):\(h):480:270,gblur=sigma=14[c];[a][c]overlay=480:270"))
        }
    }
    return out
}

var cases: [Case] = []
for (label, image) in images {
    for sigma in [1.0, 2, 6, 30, 100] {
        cases.append(filterCase("blur σ\(format1(sigma))", GaussianBlur(sigma: sigma), graph: "gblur=sigma=\(format1(sigma))",
                                label: label, image: image))
    }
}
for (label, image) in images {
    cases.append(filterCase("mirror", Mirror(), graph: "hflip", label: label, image: image))
    cases.append(filterCase("rotate 90", Rotate.clockwise, graph: "transpose=clock", label: label, image: image))
    cases.append(filterCase("rotate 180", Rotate.upsideDown, graph: "hflip,vflip", label: label, image: image))
    let a = "33.5*PI/180"
    cases.append(filterCase("rotate 33.5", Rotate(degrees: 33.5), graph: "rotate=\(a):ow=rotw(\(a)):oh=roth(\(a)):bilinear=1",
                            label: label, image: image))
}
for target in [FrameSize(1280, 720), FrameSize(640, 360)] {
    let reference = lanczos3Reference(full, to: target)
    cases.append(Case("scale →\(target.height)p", "1920x1080", theirs: "sws bicubic", pixels: full.width * full.height,
                      traffic: 3 * (full.width * full.height + target.pixelCount)) { threads in
        Parallel.workerCount = threads == 1 ? 1 : 0
        let renderer = try Scale(.exact(target)).makeRenderer(for: full.size)
        let ours = RGBImage(size: target), theirs = RGBImage(size: target)
        let sws = try SwsRunner(source: full.size, sourceFormat: AV_PIX_FMT_RGB24, destination: target, destinationFormat: AV_PIX_FMT_RGB24,
                                flags: Int32(SWS_BICUBIC) | Int32(SWS_FULL_CHR_H_INT) | Int32(SWS_FULL_CHR_H_INP) | Int32(SWS_ACCURATE_RND),
                                threads: threads)
        return ({ renderer.render(full, into: ours) }, { try sws.scale(full, into: theirs) }, {
            "PSNR vs Lanczos-3: ours \(format1(psnr(ours, reference))) dB, sws \(format1(psnr(theirs, reference))) dB; ours vs sws \(format1(psnr(ours, theirs))) dB"
        })
    })
}
for (label, image) in images {
    let size = image.size
    let yuvBytes = size.pixelCount + 2 * ((size.width + 1) / 2) * ((size.height + 1) / 2)
    cases.append(Case("rgb→yuv420p", label, theirs: "sws bicubic bt709 tv", pixels: size.pixelCount, traffic: 3 * size.pixelCount + yuvBytes) { threads in
        Parallel.workerCount = threads == 1 ? 1 : 0
        let sws = try SwsRunner(source: size, sourceFormat: AV_PIX_FMT_RGB24, destination: size, destinationFormat: AV_PIX_FMT_YUV420P,
                                flags: Int32(SWS_BICUBIC), threads: threads)
        let planes = PlaneSet(size)
        let converter = YUVConverter(matrix: .bt709, range: .limited)
        // Quality against libswscale set up like us: area filter (at 2:1 our [1 2 1]/4 × [1 1]/2),
        // left chroma siting, full-resolution chroma input.
        let matched = try SwsRunner(source: size, sourceFormat: AV_PIX_FMT_RGB24, destination: size, destinationFormat: AV_PIX_FMT_YUV420P,
                                    flags: Int32(SWS_AREA) | Int32(SWS_FULL_CHR_H_INP) | Int32(SWS_ACCURATE_RND), threads: 1,
                                    leftSitedChroma: true)
        return ({ converter.rgbToYUV420(image, into: planes.view) }, { try sws.toYUV(image) }, {
            try? matched.toYUV(image)
            let theirs = matched.view, ours = planes.view
            let y = psnrPlane(ours.y, ours.yStride, theirs.y, theirs.yStride, width: size.width, height: size.height)
            let u = psnrPlane(ours.u, ours.uStride, theirs.u, theirs.uStride, width: ours.chromaWidth, height: ours.chromaHeight)
            let v = psnrPlane(ours.v, ours.vStride, theirs.v, theirs.vStride, width: ours.chromaWidth, height: ours.chromaHeight)
            return "PSNR vs sws (area, left-sited) Y \(format1(y)) U \(format1(u)) V \(format1(v)) dB"
        })
    })
    // The pipeline's own direction and setting (RGBToFrame): 2×2 block means.
    cases.append(Case("rgb→yuv420p box", label, theirs: "sws bicubic bt709 tv", pixels: size.pixelCount, traffic: 3 * size.pixelCount + yuvBytes) { threads in
        Parallel.workerCount = threads == 1 ? 1 : 0
        let sws = try SwsRunner(source: size, sourceFormat: AV_PIX_FMT_RGB24, destination: size, destinationFormat: AV_PIX_FMT_YUV420P,
                                flags: Int32(SWS_BICUBIC), threads: threads)
        let planes = PlaneSet(size)
        let converter = YUVConverter(matrix: .bt709, range: .limited, downsampling: .box)
        return ({ converter.rgbToYUV420(image, into: planes.view) }, { try sws.toYUV(image) }, { "2×2 block means (RGBToFrame's)" })
    })
    cases.append(Case("yuv420p→rgb", label, theirs: "sws bicubic bt709 tv", pixels: size.pixelCount, traffic: 3 * size.pixelCount + yuvBytes) { threads in
        Parallel.workerCount = threads == 1 ? 1 : 0
        let forward = try SwsRunner(source: size, sourceFormat: AV_PIX_FMT_RGB24, destination: size, destinationFormat: AV_PIX_FMT_YUV420P,
                                    flags: Int32(SWS_BICUBIC), threads: 1)
        try forward.toYUV(image)
        let sws = try SwsRunner(source: size, sourceFormat: AV_PIX_FMT_YUV420P, destination: size, destinationFormat: AV_PIX_FMT_RGB24,
                                flags: Int32(SWS_BICUBIC), threads: threads)
        copyPlanes(from: forward.view, to: sws.view)
        let ours = RGBImage(size: size), theirs = RGBImage(size: size)
        let converter = YUVConverter(matrix: .bt709, range: .limited)
        let view = sws.view
        return ({ converter.yuv420ToRGB(view, into: ours) }, { try sws.fromYUV(into: theirs) }, {
            "PSNR vs sws (nearest chroma) \(format1(psnr(ours, theirs))) dB, round trip vs source: ours \(format1(psnr(ours, image))) dB, sws \(format1(psnr(theirs, image))) dB"
        })
    })
}

// Issue 14's filters: ours on the RGB frame against libavfilter's filter of the same job on the
// decoded yuv420p frame (ffmpeg's natural graph: it filters 1.5 samples a pixel where we filter 3).
do {
    let source = PlaneSet(full.size)
    YUVConverter(matrix: .bt709, range: .limited).rgbToYUV420(full, into: source.view)
    let filters: [(String, any Filter, String)] = [
        ("boxblur r=4", BoxBlur(radius: 4), "boxblur=4:1"),
        ("boxblur r=20 p=2", BoxBlur(radius: 20, power: 2), "boxblur=20:2"),
        ("sharpen 1 r=2", Sharpen(amount: 1, radius: 2), "unsharp=5:5:1:5:5:1"),
        ("pixelate 16", Pixelate(size: 16), "pixelize=w=16:h=16"),
        ("invert", Invert(), "negate"),
        ("grayscale", Grayscale(matrix: .bt709), "hue=s=0"),
        ("eq b/c/s", Eq(brightness: 0.06, contrast: 1.2, saturation: 1.3), "eq=brightness=0.06:contrast=1.2:saturation=1.3"),
        ("fade (fading)", Fade(in: Fade.Window(start: 0, duration: 1000)), "fade=t=in:st=0:d=1000"),
    ] + overlayCases()
    for (name, filter, graph) in filters {
        cases.append(Case(name, "1920x1080", theirs: graph + " (yuv420p)", pixels: full.size.pixelCount,
                          traffic: 6 * full.size.pixelCount) { threads in
            Parallel.workerCount = threads == 1 ? 1 : 0
            let renderer = try filter.makeRenderer(for: full.size)
            let output = RGBImage(size: renderer.outputSize)
            let runner = try FilterGraphRunner(graph, planes: source.view, threads: threads)
            // A filter that works in place (a region, an overlay, text) is timed as the pipeline runs
            // it: on the picture, with no copy of the whole frame.
            if let inPlace = renderer as? any InPlaceFilterRenderer {
                output.copyPixels(from: full)
                return ({ inPlace.renderInPlace(output, at: .zero) }, { try runner.run() }, { "ours in place on RGB, theirs on yuv420p" })
            }
            return ({ renderer.render(full, into: output) }, { try runner.run() }, { "ours on RGB, theirs on yuv420p" })
        })
    }
}

// The chain where the pipeline runs it: on the decoded 4:2:0 planes (PlanarChainRenderer), against
// ffmpeg's natural graph on the same yuv420p frame (no forced rgb24), and the same chain on RGB
// with its two conversions (what the pipeline did before).
do {
    let size = full.size
    let source = PlaneSet(size)
    YUVConverter(matrix: .bt709, range: .limited).rgbToYUV420(full, into: source.view)
    let chains: [(String, String)] = [
        ("blur sigma=6 | rotate 90 | mirror | scale fit=720x1280", "gblur=sigma=6,transpose=1,hflip,scale=720:1280"),
        ("blur sigma=6", "gblur=sigma=6"), ("blur sigma=30", "gblur=sigma=30"),
        ("scale fit=1280x720", "scale=1280:720"), ("rotate 90", "transpose=1"),
        ("eq brightness=0.06 contrast=1.2 saturation=1.3", "eq=brightness=0.06:contrast=1.2:saturation=1.3"),
        ("grayscale", "hue=s=0"), ("pixelate size=16", "pixelize=w=16:h=16"),
        ("boxblur radius=4", "boxblur=4:1"), ("boxblur radius=20 power=2", "boxblur=20:2"),
        // A privacy blur confined to a region (4 % of the frame), as the RGB case above.
        ("blur sigma=14 region=480,270,384,216", "split[a][b];[b]crop=384:216:480:270,gblur=sigma=14[c];[a][c]overlay=480:270"),
        // Drawing: the same logo and caption as the RGB cases above (overlayCases), on the planes.
        ("overlay /tmp/livefilter-bench-logo.png x=right-16 y=top+16", "movie=/tmp/livefilter-bench-logo.png[logo];[in][logo]overlay=x=W-w-16:y=16"),
        ("text \"00:00:01.500 · frame 45\" x=16 y=16 size=48 box=#000000@0.5 font=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
         "drawtext=fontfile=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf:text='00\\:00\\:01.500 · frame 45':x=16:y=16:fontsize=48:fontcolor=white:box=1:boxcolor=black@0.5:boxborderw=12"),
    ]
    for (text, graph) in chains {
        let chain = try FilterChain(parsing: text)
        let name = text.hasPrefix("blur sigma=6 |") ? "standard chain" : text.hasPrefix("overlay") ? "overlay 256x128"
            : text.hasPrefix("text") ? "text 48px + box" : text.contains("region=") ? "blur 14 region 4 %" : text
        cases.append(Case("yuv " + name, "1920x1080", theirs: graph + " (yuv420p)", pixels: size.pixelCount, traffic: 3 * size.pixelCount) { threads in
            Parallel.workerCount = threads == 1 ? 1 : 0
            let renderer = PlanarChainRenderer(chain: chain, inputSize: size, color: YUVConverter(matrix: .bt709, range: .limited))!
            let out = PlaneSet(renderer.outputSize)
            let runner = try FilterGraphRunner(graph, planes: source.view, threads: threads)
            return ({ renderer.render(source.view, into: out.view) }, { try runner.run() }, { "passes: " + renderer.passNames.joined(separator: ", ") })
        })
        cases.append(Case("rgb " + name, "1920x1080", theirs: graph + " (yuv420p)", pixels: size.pixelCount, traffic: 3 * size.pixelCount) { threads in
            Parallel.workerCount = threads == 1 ? 1 : 0
            let toRGB = try SwsRunner(source: size, sourceFormat: AV_PIX_FMT_YUV420P, destination: size, destinationFormat: AV_PIX_FMT_RGB24,
                                      flags: Int32(SWS_BICUBIC), threads: threads)
            copyPlanes(from: source.view, to: toRGB.view)
            let rgb = RGBImage(size: size)
            let renderer = try ChainRenderer(chain: chain, inputSize: size)
            let out = PlaneSet(renderer.outputSize)
            let toYUV = YUVConverter(matrix: .bt709, range: .limited, downsampling: .box)
            let runner = try FilterGraphRunner(graph, planes: source.view, threads: threads)
            return ({
                try toRGB.fromYUV(into: rgb)
                toYUV.rgbToYUV420(renderer.render(rgb), into: out.view)
            }, { try runner.run() }, { "sws → RGB chain → Swift yuv420p" })
        })
    }
}

/// Three planes owned by the bench, laid out like an AVFrame's.
final class PlaneSet {
    let storage: UnsafeMutablePointer<UInt8>
    let view: PlanarYUV420View
    init(_ size: FrameSize) {
        let stride = (size.width + 63) / 64 * 64, cstride = ((size.width + 1) / 2 + 63) / 64 * 64
        let ch = (size.height + 1) / 2
        storage = .allocate(capacity: stride * size.height + 2 * cstride * ch + 64)
        storage.initialize(repeating: 0, count: stride * size.height + 2 * cstride * ch + 64)
        view = PlanarYUV420View(width: size.width, height: size.height, y: storage, yStride: stride,
                                u: storage + stride * size.height, uStride: cstride,
                                v: storage + stride * size.height + cstride * ch, vStride: cstride)
    }
    deinit { storage.deallocate() }
}

func copyPlanes(from a: PlanarYUV420View, to b: PlanarYUV420View) {
    copyRows(a.height, bytes: a.width, from: a.y, a.yStride, to: b.y, b.yStride)
    copyRows(a.chromaHeight, bytes: a.chromaWidth, from: a.u, a.uStride, to: b.u, b.uStride)
    copyRows(a.chromaHeight, bytes: a.chromaWidth, from: a.v, a.vStride, to: b.v, b.vStride)
}

// MARK: Run


if arguments.contains("--fused-probe") {
    // Issue 13's "convert in bands fused with the first and last filter": the RGB path's whole-frame
    // sws → invert → ours to yuv420p against the same done band by band (one thread, 1080p), so a
    // band's RGB stays in cache between the three steps. `--band N` rows a band.
    Parallel.workerCount = 1
    let size = full.size
    let band = Int(option("--band") ?? "16")!
    let forward = try SwsRunner(source: size, sourceFormat: AV_PIX_FMT_RGB24, destination: size, destinationFormat: AV_PIX_FMT_YUV420P,
                                flags: Int32(SWS_BICUBIC), threads: 1)
    try forward.toYUV(full)
    let sws = try SwsRunner(source: size, sourceFormat: AV_PIX_FMT_YUV420P, destination: size, destinationFormat: AV_PIX_FMT_RGB24,
                            flags: Int32(SWS_BICUBIC), threads: 1)
    copyPlanes(from: forward.view, to: sws.view)
    let rgb = RGBImage(size: size), rgb2 = RGBImage(size: size)
    let invert = try Invert().makeRenderer(for: size)
    let out = PlaneSet(size), out2 = PlaneSet(size)
    let conv = YUVConverter(matrix: .bt709, range: .limited, downsampling: .box)
    let src = sws.view
    func invertRows(_ image: RGBImage, _ rows: Range<Int>) {
        let n = image.width * 3
        for y in rows {
            let d = image.row(y)
            var x = 0
            while x + 8 <= n { let p = UnsafeMutableRawPointer(d + x); p.storeBytes(of: ~p.loadUnaligned(as: UInt64.self), as: UInt64.self); x += 8 }
            while x < n { d[x] = ~d[x]; x += 1 }
        }
    }
    let whole = measure {
        try! sws.fromYUV(into: rgb)
        invert.render(rgb, into: rgb2)
        conv.rgbToYUV420(rgb2, into: out.view)
    }
    let wholeMin = lastMinimum
    let wholeInPlace = measure {
        try! sws.fromYUV(into: rgb)
        invertRows(rgb, 0..<size.height)
        conv.rgbToYUV420(rgb, into: out.view)
    }
    let banded = measure {
        var y = 0
        while y < size.height {
            let h = min(band, size.height - y)
            // sws_scale's slice pointers point at the slice's own rows; the destination's at its top.
            var s: [UnsafePointer<UInt8>?] = [UnsafePointer(src.y + y * src.yStride), UnsafePointer(src.u + y / 2 * src.uStride),
                                              UnsafePointer(src.v + y / 2 * src.vStride), nil]
            var ss: [Int32] = [Int32(src.yStride), Int32(src.uStride), Int32(src.vStride), 0]
            var d: [UnsafeMutablePointer<UInt8>?] = [rgb2.baseAddress, nil, nil, nil]
            var ds: [Int32] = [Int32(rgb2.bytesPerRow), 0, 0, 0]
            _ = sws_scale(sws.pointer, &s, &ss, Int32(y), Int32(h), &d, &ds)
            invertRows(rgb2, y..<(y + h))
            let o = out2.view
            let view = PlanarYUV420View(width: size.width, height: h, y: o.y + y * o.yStride, yStride: o.yStride,
                                        u: o.u + y / 2 * o.uStride, uStride: o.uStride, v: o.v + y / 2 * o.vStride, vStride: o.vStride)
            conv.rgbToYUV420(UnsafePointer(rgb2.row(y)), bytesPerRow: rgb2.bytesPerRow, into: view)
            y += h
        }
    }
    let bandedMin = lastMinimum
    let partSws = measure { try! sws.fromYUV(into: rgb) }
    let partInvert = measure { invertRows(rgb, 0..<size.height) }
    let partToYUV = measure { conv.rgbToYUV420(rgb, into: out.view) }
    print("parts: sws → rgb \(format2(partSws)) ms, invert in place \(format2(partInvert)), ours → yuv420p \(format2(partToYUV))")
    try! sws.fromYUV(into: rgb)
    invertRows(rgb, 0..<size.height)
    conv.rgbToYUV420(rgb, into: out.view)
    var same = true
    let a = out.view, b = out2.view
    for y in 0..<size.height where memcmp(a.y + y * a.yStride, b.y + y * b.yStride, size.width) != 0 { same = false }
    print("whole frame: \(format2(whole)) ms (min \(format2(wholeMin))), in place \(format2(wholeInPlace)); banded by \(band) rows: \(format2(banded)) ms (min \(format2(bandedMin))); same picture: \(same)")
    exit(0)
}

if arguments.contains("--blur-quality") {
    // PSNR of our blur against the exact double-precision Gaussian (clamp-to-edge), 1280x720.
    let sigmas = (option("--sigmas") ?? "0.5,1,2,3,4,6,8,12,30,100").split(separator: ",").compactMap { Double($0) }
    for sigma in sigmas {
        let renderer = try GaussianBlur(sigma: sigma).makeRenderer(for: hd.size)
        let ours = RGBImage(size: hd.size)
        renderer.render(hd, into: ours)
        print("blur σ\(format1(sigma)) 1280x720: PSNR vs exact Gaussian \(format2(psnr(ours, exactGaussian(hd, sigma: sigma)))) dB")
    }
    exit(0)
}

var floors: [Int: Double] = [:]
for threads in threadModes {
    floors[threads] = copyRate(threads: threads)
    print("memory floor, \(threads) thread(s): memcpy \(format2(floors[threads]! / 1e9)) GB/s copied (\(format2(2 * floors[threads]! / 1e9)) GB/s read+write)")
}
print("")
let header = [pad("kernel", 14, left: true), pad("frame", 10, left: true), "thr", pad("ours ms", 8), pad("(min)", 8), pad("theirs ms", 9), pad("ratio", 6),
              pad("ours Mpx/s", 10), pad("their Mpx/s", 11), pad("floor %", 7), "  theirs / quality"].joined(separator: " ")
print(header)
print(String(repeating: "-", count: header.count + 40))
var results: [Result] = []
for c in cases where only.map({ c.kernel.contains($0) || c.size.contains($0) }) ?? true {
    for threads in threadModes {
        do {
            let (ours, theirs, quality) = try c.prepare(threads)
            let oursMs = try measure(ours)
            let oursMin = lastMinimum
            let theirsMs = try theirs.map { try measure($0) }
            let floorMs = Double(c.traffic) / (2 * floors[threads]!) * 1000
            let r = Result(kernel: c.kernel, size: c.size, threads: threads, ours: oursMs, oursMin: oursMin, theirs: theirsMs, theirsName: c.theirsName,
                           pixels: c.pixels, traffic: c.traffic, quality: quality())
            results.append(r)
            let ratio = theirsMs.map { $0 / oursMs } ?? .nan
            print([pad(r.kernel, 14, left: true), pad(r.size, 10, left: true), pad("\(threads)", 3), pad(format2(oursMs), 8), pad(format2(oursMin), 8),
                   pad(theirsMs.map(format2) ?? "-", 9), pad(format1(ratio) + "×", 6),
                   pad(format1(Double(c.pixels) / oursMs / 1000), 10), pad(theirsMs.map { format1(Double(c.pixels) / $0 / 1000) } ?? "-", 11),
                   pad(format1(100 * floorMs / oursMs), 7), "  \(c.theirsName); \(r.quality)"].joined(separator: " "))
        } catch {
            print("\(c.kernel) \(c.size) \(threads)T: \(error)")
        }
    }
}
print("\nfloor % = time an ideal memcpy pass would need to read the input and write the output once / our time.")
print("load average at end \(loadAverage())")
