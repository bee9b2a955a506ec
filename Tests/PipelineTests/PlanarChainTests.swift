import Filters
import Foundation
import MediaIO
import Pipeline
import Testing

/// The chain's meaning is RGB; the planar path must give that picture. Decoded real media (a pan
/// across a photograph from Debian's mate-backgrounds, x264-encoded by the ffmpeg CLI) goes both
/// ways: through `PlanarFrameFilter` on the decoded planes, and through a double-precision oracle
/// — each decoded frame converted exactly to 8-bit RGB (BT.709, chroma replicated as libswscale
/// does), the RGB `ChainRenderer`, then exactly back to 4:2:0 (2×2 chroma means, as `RGBToFrame`).
/// Tolerance: every plane ≥ 50 dB PSNR, and the same size.
@Suite(.serialized)
struct PlanarChainTests {
    static let photo = "/usr/share/backgrounds/mate/abstract/Elephants_3840x2160.jpg"

    /// Three decoded 1280x720 frames of a pan across the photograph.
    static let frames: [Frame] = decodedPan(format: "yuv420p")
    /// The same pan in full range (yuvj420p: what some cameras and phones record).
    static let fullRangeFrames: [Frame] = decodedPan(format: "yuvj420p")

    static func decodedPan(format: String) -> [Frame] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("planar-\(getpid())-\(format)")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let clip = folder.appendingPathComponent("pan.mp4").path
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-hide_banner", "-loglevel", "error", "-y", "-loop", "1", "-framerate", "30", "-i", photo,
                            "-vf", "scale=1920:-2,crop=1280:720:x='300+24*n':y=150,format=\(format)", "-frames:v", "3",
                            "-c:v", "libx264", "-crf", "14", "-colorspace", "bt709", "-color_primaries", "bt709",
                            "-color_trc", "bt709", clip]
        try? ffmpeg.run()
        ffmpeg.waitUntilExit()
        var frames: [Frame] = []
        guard let demuxer = try? Demuxer(url: clip), let decoder = try? Decoder(demuxer: demuxer, streamIndex: demuxer.video.index) else {
            return []
        }
        let packet = Packet()
        while case .packet? = try? demuxer.read(into: packet) {
            try? decoder.send(packet)
            while case let .frame(f)? = try? decoder.receive() { frames.append(f) }
        }
        decoder.sendEndOfStream()
        while case let .frame(f)? = try? decoder.receive() { frames.append(f) }
        try? FileManager.default.removeItem(at: folder)
        return frames
    }

    static let chains: [FilterChain] = [
        FilterChain([Crop(width: 640, height: 360, x: 100, y: 50), Pad(width: 800, height: 480, fill: RGBColor(r: 200, g: 30, b: 90))]),
    ] + [
        "blur sigma=6 | rotate 90 | mirror | scale fit=720x1280",
        "blur sigma=6", "blur sigma=30", "blur sigma=1.5", "blur sigma=0.6",
        "scale fit=1280x720", "scale 854x480", "scale 640x360 method=area", "scale 1000x562 method=bilinear",
        "scale 1920x1080", "rotate 90", "mirror vertical | rotate 270",
        "crop 640x360+100+50", "blur sigma=4 x=100 y=100 w=200 h=120",
        "scale fit=1280x720 | blur sigma=3 | rotate 180",
        // Blur and scale fused into one pass (BlurAndScale), turned or not, down and up.
        "blur sigma=6 | scale 854x480", "blur sigma=8 | rotate 90 | mirror | scale fit=360x640",
        "blur sigma=6 | scale 1920x1080 method=bilinear", "blur sigma=12 | scale 640x360 method=area",
        // eq: a table per plane (libavfilter's eq), against the RGB eq.
        "eq brightness=0.06 saturation=1.3", "blur sigma=3 | eq contrast=1.2 gamma=0.9 | rotate 90",
        // grayscale: the luma plane as it is, chroma neutral.
        "grayscale", "scale fit=1280x720 | grayscale | mirror",
        // pixelate: block means (even blocks; 720 = 22 × 32 + 16 leaves partial blocks at the bottom).
        "pixelate size=16", "pixelate size=32 | rotate 90", "blur sigma=2 | pixelate size=6",
        // boxblur: the picture's box on luma, R + ½ chroma samples (quarter-weight ends) on chroma.
        "boxblur 4", "boxblur radius=1", "boxblur radius=7 power=3", "boxblur radius=20 power=2 | scale fit=1280x720",
        // invert: a table per plane (251 − Y′, 256 − C).
        "invert", "blur sigma=3 | invert | rotate 90",
        // Near the largest radius, with odd chroma sizes (33x25: the half box's window passes the plane's edges).
        "crop 66x50+100+100 | boxblur radius=25 power=2", "crop 98x62+300+200 | boxblur radius=3",
    ].map { try! FilterChain(parsing: $0) }

    @Test(arguments: chains)
    func planarPictureMatchesTheRGBChain(chain: FilterChain) throws {
        try Self.compare(chain)
    }

    /// Full-range pictures: written as limited range by the first pass, then the chain. Moves,
    /// linear filters, tables (eq, invert), a pad's fill and drawing in place after the range pass.
    @Test(arguments: ["", "rotate 90", "blur sigma=6 | rotate 90 | mirror | scale fit=720x1280", "scale 854x480",
                      "eq brightness=0.06 saturation=1.3", "invert", "text \"12:34\" x=20 y=20 size=48 box=#000000@0.5 font=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                      "crop 640x360+100+50 | boxblur 4"].map { try! FilterChain(parsing: $0) } + [
                        FilterChain([Pad(width: 1400, height: 800, fill: RGBColor(r: 200, g: 30, b: 90))])])
    func fullRangePicturesMatchTheRGBChain(chain: FilterChain) throws {
        try Self.compare(chain, fullRange: true)
    }

    /// The chain on the planes against the RGB chain through the double-precision oracle, every
    /// plane of three decoded frames at `time`: ≥ 50 dB, same size. Prints the worst plane.
    /// With `region` (picture pixels, even), the PSNR is also taken over that part alone: what a
    /// drawing filter changed, not diluted by the rest of the picture.
    /// `fullRange`: the frames are full-range (yuvj420p) and the output limited range, as the
    /// pipeline writes them.
    static func compare(_ chain: FilterChain, at time: FrameTime = .zero, region: PixelRect? = nil, fullRange: Bool = false) throws {
        let chainText = chain.description + (fullRange ? " (full range in)" : "")
        #expect(FileManager.default.fileExists(atPath: Self.photo), "install mate-backgrounds (scripts/install-deps.sh does)")
        let frames = fullRange ? Self.fullRangeFrames : Self.frames
        try #require(frames.count == 3, "could not make or decode the natural test clip")
        let size = FrameSize(frames[0].width, frames[0].height)
        let color = ColorDescription(matrix: .bt709, primaries: .bt709, transfer: .bt709, range: .limited)
        let planar = try #require(PlanarFrameFilter(chain: chain, inputSize: size, color: color, inputRange: fullRange ? .full : .limited),
                                  "\(chainText) should run on planes")
        #expect(planar.accepts(frames[0]), "\(chainText): the decoded frames are the filter's")
        let rgb = try ChainRenderer(chain: chain, inputSize: size)
        #expect(planar.outputSize == rgb.outputSize, "geometry")
        #expect(planar.renderer.isTimeDependent == rgb.isTimeDependent)
        var worst = Double.infinity, worstInRegion = Double.infinity
        for frame in frames {
            let fast = try planar.apply(frame, at: time)
            let reference = ExactYUV.toYUV(rgb.render(ExactYUV.toRGB(frame.planarView, fullRange: fullRange), at: time))
            let out = fast.planarView
            let planes = [(out.y, out.yStride, out.width, out.height), (out.u, out.uStride, out.chromaWidth, out.chromaHeight),
                          (out.v, out.vStride, out.chromaWidth, out.chromaHeight)]
            for (index, plane) in planes.enumerated() {
                let db = ExactYUV.psnr(plane.0, plane.1, reference[index], width: plane.2, height: plane.3)
                worst = min(worst, db)
                #expect(db >= 50, "\(chainText): plane \(["Y", "Cb", "Cr"][index]) \(String(format: "%.2f", db)) dB")
                if let region {
                    let local = ExactYUV.psnr(plane.0, plane.1, reference[index], width: plane.2, height: plane.3,
                                              region: index == 0 ? region : PixelRect(x: region.x / 2, y: region.y / 2, width: region.width / 2, height: region.height / 2))
                    worstInRegion = min(worstInRegion, local)
                    #expect(local >= 50, "\(chainText): plane \(["Y", "Cb", "Cr"][index]) in \(region): \(String(format: "%.2f", local)) dB")
                }
            }
        }
        let inRegion = region.map { ", in \($0): \(String(format: "%.2f", worstInRegion)) dB" } ?? ""
        print("planar vs RGB chain, worst plane: \(String(format: "%.2f", worst)) dB\(inRegion) — \(chainText)")
    }

    static let font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

    /// A 97x61 logo with an alpha gradient (every weight from 0 to 255) and varying colours, made by
    /// ffmpeg; `premultiplied`: each colour at most its alpha, as premultiplied images are.
    static func logo(premultiplied: Bool = false) throws -> String {
        let name = premultiplied ? "planar-logo-pm-\(getpid()).png" : "planar-logo-\(getpid()).png"
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(name).path
        let alpha = "mod(X*3+Y*2\\,256)"
        let colours = premultiplied ? "r='\(alpha)*X/97':g='\(alpha)*(61-Y)/61':b='\(alpha)/2'" : "r='X*2':g='255-Y*3':b='128+X-Y'"
        if FileManager.default.fileExists(atPath: path) { return path }
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-v", "error", "-y", "-f", "lavfi", "-i", "nullsrc=s=97x61", "-vf",
                            "format=rgba,geq=\(colours):a='\(alpha)',format=rgba", "-frames:v", "1", path]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        try #require(ffmpeg.terminationStatus == 0, "ffmpeg could not make the logo")
        return path
    }

    /// Text and overlays draw on the planes (alpha per pixel on luma, the 2×2 block's mean on
    /// chroma): odd positions, a box under the text, opacity, premultiplied alpha, a scaled logo,
    /// a move after the drawing, and text that changes with time at a later tick.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: font), "needs fonts-dejavu-core"))
    func drawingOnThePlanesMatchesTheRGBChain() throws {
        let logo = try Self.logo(), premultiplied = try Self.logo(premultiplied: true)
        // Each with the part of the 1280x720 picture it draws on (even edges), checked on its own too.
        let cases: [(String, PixelRect)] = [
            ("text \"Privacy: ON — 12:34\" x=41 y=37 size=48 font=\(Self.font)", PixelRect(x: 40, y: 36, width: 520, height: 60)),
            ("text \"boxed\\nsecond line\" x=right-23 y=bottom-17 size=40 color=#FFD000 box=#102040@0.7 font=\(Self.font)",
             PixelRect(x: 960, y: 560, width: 296, height: 142)),
            ("text \"faint\" x=center y=center size=96 opacity=0.5 font=\(Self.font)", PixelRect(x: 500, y: 300, width: 280, height: 120)),
            ("overlay \(logo) x=37 y=21", PixelRect(x: 36, y: 20, width: 100, height: 64)),
            ("overlay \(logo) x=right-16 y=top+15 opacity=0.6", PixelRect(x: 1166, y: 14, width: 100, height: 64)),
            ("overlay \(premultiplied) x=-20 y=bottom+9 alpha=premultiplied", PixelRect(x: 0, y: 666, width: 78, height: 54)),
            ("overlay \(premultiplied) x=101 y=99 alpha=premultiplied opacity=0.7", PixelRect(x: 100, y: 98, width: 100, height: 64)),
            ("overlay \(logo) x=center y=center scale=2.5", PixelRect(x: 518, y: 282, width: 244, height: 156)),
            ("scale fit=1280x720 | overlay \(logo) x=5 y=5 | text \"LIVE\" x=right-33 y=13 size=30 box=#C00000@1 font=\(Self.font) | rotate 90",
             PixelRect(x: 0, y: 0, width: 720, height: 200)),
            ("blur sigma=4 | text \"{time} #{frame}\" x=17 y=bottom-21 size=36 font=\(Self.font)", PixelRect(x: 16, y: 650, width: 400, height: 52)),
        ]
        for (text, region) in cases {
            try Self.compare(try FilterChain(parsing: text), at: FrameTime(seconds: 83.4, frame: 2502), region: region)
        }
    }

    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../samples").standardized.path

    /// Timelines on the planes: regions (odd, in percent, an ellipse with a feather), a track's
    /// moving boxes, `enable=` inside and outside its range, keyframed parameters.
    @Test func timelinesOnThePlanesMatchTheRGBChain() throws {
        let cases: [(String, Double, PixelRect?)] = [
            ("blur sigma=14 region=200,100,300,200 shape=ellipse feather=8", 0, PixelRect(x: 190, y: 90, width: 320, height: 220)),
            ("blur sigma=6 region=101,51,257,181", 0, PixelRect(x: 100, y: 50, width: 260, height: 184)),
            ("pixelate size=16 region=10%,10%,30%,30%", 0, PixelRect(x: 128, y: 72, width: 384, height: 216)),
            ("blur sigma=14 track=\(Self.samples)/faces.json shape=ellipse feather=8", 1.5, nil),
            ("pixelate size=24 track=\(Self.samples)/plates.csv | mirror", 1.0, nil),
            ("blur sigma=8 enable=1-3", 2, nil), ("blur sigma=8 enable=1-3", 5, nil),
            ("blur sigma=0@0,12@2 | scale 854x480", 1, nil), ("invert enable=1-2,4-", 1.5, nil),
        ]
        for (text, seconds, region) in cases {
            let chain = try FilterChain(parsing: text)
            #expect(PlanarChainRenderer.supports(chain, inputSize: FrameSize(1280, 720), color: YUVConverter()), "\(text)")
            try Self.compare(chain, at: FrameTime(seconds: seconds, frame: Int(seconds * 30)), region: region)
        }
    }

    /// Drawing and regions at the edges of tiny pictures: boxes and logos half outside, a feather
    /// past the picture, a text box larger than the picture.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: font), "needs fonts-dejavu-core"))
    func edgesOfTinyPicturesMatchTheRGBChain() throws {
        let logo = try Self.logo()
        for text in [
            "crop 16x10+300+200 | text \"Hello\" x=-5 y=-3 size=12 box=#FF0000@0.5 font=\(Self.font)",
            "crop 32x18+300+200 | blur sigma=3 region=24,12,20,20 feather=4 shape=ellipse",
            "crop 34x20+300+200 | overlay \(logo) x=right+40 y=bottom+50",
            "crop 2x2+300+200 | pixelate size=2 region=1,1,1,1 | text \"W\" x=0 y=0 size=40 font=\(Self.font)",
        ] {
            try Self.compare(try FilterChain(parsing: text), at: FrameTime(seconds: 1, frame: 30))
        }
    }

    /// Fades mid-way (to black, to a colour, in and out at once) on the planes, drawn in place.
    @Test func fadesOnThePlanesMatchTheRGBChain() throws {
        for (text, seconds) in [("fade in=0,2", 0.7), ("fade out=1,3 color=#FF8000 | scale 854x480", 2.0),
                                ("blur sigma=2 | fade in=0,1 out=0.5,2 color=#2040C0", 0.8)] {
            try Self.compare(try FilterChain(parsing: text), at: FrameTime(seconds: seconds, frame: Int(seconds * 30)))
        }
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: font), "needs fonts-dejavu-core"))
    func textThatChangesWithTimeIsDrawnAtEachPicturesTime() throws {
        let frames = Self.frames
        try #require(frames.count == 3)
        let size = FrameSize(frames[0].width, frames[0].height)
        let color = ColorDescription(matrix: .bt709, primaries: .bt709, transfer: .bt709, range: .limited)
        let chain = try FilterChain(parsing: "text \"{frame}\" x=20 y=20 size=64 font=\(Self.font)")
        let planar = try #require(PlanarFrameFilter(chain: chain, inputSize: size, color: color))
        #expect(planar.renderer.isTimeDependent)
        let source = frames[0].planarView
        let before = (0..<100).map { Array(UnsafeBufferPointer(start: source.y + $0 * source.yStride, count: 300)) }
        let a = try planar.apply(frames[0], at: FrameTime(seconds: 0, frame: 1))
        let b = try planar.apply(frames[0], at: FrameTime(seconds: 1, frame: 8))
        let (va, vb) = (a.planarView, b.planarView)
        var differ = false
        for y in 20..<100 where memcmp(va.y + y * va.yStride, vb.y + y * vb.yStride, 200) != 0 { differ = true }
        #expect(differ, "frame 1 and frame 8 should draw different digits")
        // The decoder's picture is never drawn on: the chain copies it first.
        let after = (0..<100).map { Array(UnsafeBufferPointer(start: source.y + $0 * source.yStride, count: 300)) }
        #expect(before == after)
        #expect(planar.renderer.passNames == ["copy", chain.description])
    }

    @Test func blurThenScaleIsOnePassWhereItGivesTheSamePicture() throws {
        let size = FrameSize(1280, 720), color = YUVConverter(matrix: .bt709, range: .limited)
        func passes(_ text: String) throws -> [String] {
            try #require(PlanarChainRenderer(chain: try FilterChain(parsing: text), inputSize: size, color: color)).passNames
        }
        #expect(try passes("blur sigma=8 | rotate 90 | mirror | scale fit=360x640")
                == ["blur sigma=8 + scale fit=360x640", "rotate 90 + mirror horizontal"])
        // Too little blur for the reduction (chroma σ 1 against a 4× stretch): two passes.
        #expect(try passes("blur sigma=2 | scale 320x180") == ["blur sigma=2", "scale 320x180"])
        #expect(try passes("blur sigma=6 x=0 y=0 w=640 h=360 | scale 640x360").count == 2)
    }

    @Test func chainsThatNeedRGBStayOnRGB() throws {
        let size = FrameSize(1280, 720)
        for text in ["rotate 33", "crop 640x360+101+50", "scale 853x480", "blur sigma=4 x=101 y=100 w=200 h=120", "pixelate size=5", "",
                     "pixelate size=5 region=0,0,100,100", "sharpen 1 enable=1-2", "pixelate size=4@0,5@1"] {
            #expect(!PlanarChainRenderer.supports(try FilterChain(parsing: text), inputSize: size, color: YUVConverter()), "\(text)")
        }
        #expect(!PlanarChainRenderer.supports(FilterChain([Pad(width: 1282, height: 720)]), inputSize: size, color: YUVConverter()), "odd pad offset")
        #expect(PlanarChainRenderer.supports(FilterChain([Pad(width: 1284, height: 724)]), inputSize: size, color: YUVConverter()))
        #expect(!PlanarChainRenderer.supports(try FilterChain(parsing: "blur 2"), inputSize: FrameSize(1279, 720), color: YUVConverter()))
    }

    /// A downscale so strong that 16-bit weights lose the kernel's shape stays on the float RGB
    /// scaler; 20× still runs on the planes (where it agrees with libswscale better than RGB does).
    @Test func strongDownscalesStayOnRGB() throws {
        let size = FrameSize(1280, 720)
        for text in ["scale 32x18", "scale 16x10", "scale 40x22 | rotate 90"] {
            #expect(!PlanarChainRenderer.supports(try FilterChain(parsing: text), inputSize: size, color: YUVConverter()), "\(text)")
        }
        for text in ["scale 64x36", "scale 32x18 method=area", "scale 16x10 method=bilinear", "scale 2560x1440"] {
            #expect(PlanarChainRenderer.supports(try FilterChain(parsing: text), inputSize: size, color: YUVConverter()), "\(text)")
        }
    }
}

/// Double-precision BT.709 limited-range conversions, the oracle for the planar path.
enum ExactYUV {
    static let kr = 0.2126, kb = 0.0722, kg = 1 - 0.2126 - 0.0722

    static func byte(_ x: Double) -> UInt8 { UInt8(min(max(x.rounded(), 0), 255)) }

    /// 4:2:0 → RGB with each chroma sample replicated over its 2×2 block; `fullRange`: the
    /// samples span 0…255 (JPEG's range).
    static func toRGB(_ p: PlanarYUV420View, fullRange: Bool = false) -> RGBImage {
        let image = RGBImage(width: p.width, height: p.height)
        let (lumaOffset, lumaScale, chromaScale) = fullRange ? (0.0, 1.0, 1.0) : (16.0, 255.0 / 219, 255.0 / 224)
        for y in 0..<p.height {
            for x in 0..<p.width {
                let l = (Double(p.y[y * p.yStride + x]) - lumaOffset) * lumaScale
                let cb = (Double(p.u[y / 2 * p.uStride + x / 2]) - 128) * chromaScale
                let cr = (Double(p.v[y / 2 * p.vStride + x / 2]) - 128) * chromaScale
                image[x, y] = (byte(l + 2 * (1 - kr) * cr), byte(l - 2 * (1 - kb) * kb / kg * cb - 2 * (1 - kr) * kr / kg * cr),
                               byte(l + 2 * (1 - kb) * cb))
            }
        }
        return image
    }

    /// RGB → three tightly packed planes, chroma the mean of each 2×2 block.
    static func toYUV(_ image: RGBImage) -> [[UInt8]] {
        let w = image.width, h = image.height
        var y = [UInt8](repeating: 0, count: w * h), u = [UInt8](repeating: 0, count: (w / 2) * (h / 2)), v = u
        func rgb(_ x: Int, _ y: Int) -> (Double, Double, Double) {
            let p = image[x, y]
            return (Double(p.r), Double(p.g), Double(p.b))
        }
        for j in 0..<h {
            for i in 0..<w {
                let (r, g, b) = rgb(i, j)
                y[j * w + i] = byte(16 + 219 * (kr * r + kg * g + kb * b) / 255)
            }
        }
        for j in 0..<(h / 2) {
            for i in 0..<(w / 2) {
                var cb = 0.0, cr = 0.0
                for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let (r, g, b) = rgb(2 * i + dx, 2 * j + dy)
                    let luma = kr * r + kg * g + kb * b
                    cb += (b - luma) / (2 * (1 - kb)) / 4
                    cr += (r - luma) / (2 * (1 - kr)) / 4
                }
                u[j * (w / 2) + i] = byte(128 + 224 * cb / 255)
                v[j * (w / 2) + i] = byte(128 + 224 * cr / 255)
            }
        }
        return [y, u, v]
    }

    /// PSNR of plane `a` against the packed plane `b`, over all of it or over `region`'s samples.
    static func psnr(_ a: UnsafeMutablePointer<UInt8>, _ stride: Int, _ b: [UInt8], width: Int, height: Int,
                     region: PixelRect? = nil) -> Double {
        let r = region ?? PixelRect(x: 0, y: 0, width: width, height: height)
        var sum = 0.0
        for y in r.y..<(r.y + r.height) {
            for x in r.x..<(r.x + r.width) {
                let d = Double(a[y * stride + x]) - Double(b[y * width + x])
                sum += d * d
            }
        }
        let mse = sum / Double(r.width * r.height)
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }
}
