import Filters
import Foundation
import Testing

/// The timeline (`enable=`, keyframes), regions and tracks: evaluated at output tick times, confined
/// to their boxes, clipped at the frame's edge. Oracles: libavfilter's filters on the whole picture,
/// hand-computed interpolation, and the untouched source outside the boxes.
@Suite struct TimelineTests {
    static func chain(_ text: String) throws -> FilterChain { try FilterChain(parsing: text) }

    static func render(_ text: String, _ image: RGBImage, at seconds: Double) throws -> RGBImage {
        let renderer = try ChainRenderer(chain: try chain(text), inputSize: image.size)
        let out = renderer.render(image, at: FrameTime(seconds: seconds, frame: Int(seconds * 30)))
        let copy = RGBImage(size: out.size)
        copy.copyPixels(from: out)
        return copy
    }

    static func maxDifference(_ a: RGBImage, _ b: RGBImage, in rect: PixelRect? = nil) -> Int {
        let r = rect ?? PixelRect(x: 0, y: 0, width: a.width, height: a.height)
        var worst = 0
        for y in r.y..<(r.y + r.height) {
            let p = a.row(y), q = b.row(y)
            for x in (r.x * 3)..<((r.x + r.width) * 3) { worst = max(worst, abs(Int(p[x]) - Int(q[x]))) }
        }
        return worst
    }

    /// PSNR over a rectangle, in dB.
    static func psnr(_ a: RGBImage, _ b: RGBImage, in r: PixelRect) -> Double {
        var squared = 0.0
        for y in r.y..<(r.y + r.height) {
            let p = a.row(y), q = b.row(y)
            for x in (r.x * 3)..<((r.x + r.width) * 3) {
                let d = Double(p[x]) - Double(q[x])
                squared += d * d
            }
        }
        let mse = squared / Double(r.width * r.height * 3)
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    /// Every pixel outside `rects` is the source's, to the bit.
    static func untouchedOutside(_ rects: [PixelRect], _ out: RGBImage, _ source: RGBImage) -> Bool {
        for y in 0..<out.height {
            let p = out.row(y), q = source.row(y)
            for x in 0..<out.width where !rects.contains(where: { x >= $0.x && x < $0.x + $0.width && y >= $0.y && y < $0.y + $0.height }) {
                if p[3 * x] != q[3 * x] || p[3 * x + 1] != q[3 * x + 1] || p[3 * x + 2] != q[3 * x + 2] { return false }
            }
        }
        return true
    }

    // MARK: Keyframes and enable

    @Test("keyframes: linear between keys, held before the first and after the last, at 30 fps tick times")
    func keyframeValues() throws {
        let frames = try #require(FilterChain(parsing: "blur sigma=0@0,12@2,12@8,0@10").filters.first as? ScheduledFilter)
        #expect(frames.isTimeDependent)
        // Hand-computed: 0 → 12 over 0…2 s, 12 until 8 s, 12 → 0 over 8…10 s.
        for tick in [0, 1, 15, 30, 59, 60, 61, 239, 240, 255, 299, 300, 301, 600] {
            let t = Double(tick) / 30
            let expected = t <= 2 ? 6 * t : t <= 8 ? 12 : t <= 10 ? 12 - 6 * (t - 8) : 0
            let image = Images.natural(160, 90)
            let ours = try Self.render("blur sigma=0@0,12@2,12@8,0@10", image, at: t)
            let direct = try FiltersTests.render(GaussianBlur(sigma: expected), image)
            #expect(Self.maxDifference(ours, direct) == 0, "tick \(tick): sigma \(expected)")
        }
        // Integers round; a keyframed integer parameter stays in its range.
        let pixelate = Images.natural(96, 64)
        let at1 = try Self.render("pixelate size=2@0,10@2", pixelate, at: 1)
        #expect(Self.maxDifference(at1, try FiltersTests.render(Pixelate(size: 6), pixelate)) == 0)
    }

    @Test("enable=1-2,4-: each range from its start up to its end; the filter is libavfilter's negate inside")
    func enableRanges() throws {
        let image = Images.natural(320, 180)
        let negated = try Oracle.libavfilter("negate", image)
        for (t, on) in [(0.0, false), (0.999, false), (1.0, true), (1.5, true), (1.9999, true), (2.0, false), (3.9, false), (4.0, true), (600, true)] {
            let out = try Self.render("invert enable=1-2,4-", image, at: t)
            #expect(Self.maxDifference(out, on ? negated : image) == 0, "at \(t) s the filter should be \(on ? "on" : "off")")
        }
    }

    // MARK: Regions

    @Test("region: inside is the whole-picture filter's result (libavfilter negate), outside the source to the bit; % of the picture")
    func regionInvert() throws {
        let image = Images.natural(320, 180)
        let negated = try Oracle.libavfilter("negate", image)
        let out = try Self.render("invert region=10%,20%,25%,50%", image, at: 0)
        let box = PixelRect(x: 32, y: 36, width: 80, height: 90)
        #expect(Self.maxDifference(out, negated, in: box) == 0)
        #expect(Self.untouchedOutside([box], out, image))
    }

    @Test("region blur uses the picture around the box as context: ≥ 50 dB against the whole-picture blur inside it")
    func regionBlurContext() throws {
        let image = Images.natural(480, 270)
        let whole = try FiltersTests.render(GaussianBlur(sigma: 6), image)
        let out = try Self.render("blur sigma=6 region=200,100,120,90", image, at: 0)
        let box = PixelRect(x: 200, y: 100, width: 120, height: 90)
        let quality = Self.psnr(out, whole, in: box)
        #expect(quality >= 50, "PSNR \(quality) dB")
        #expect(Self.untouchedOutside([box], out, image))
    }

    @Test("a mosaic region keeps its blocks on the picture's grid: equal to the whole-picture pixelate inside the box")
    func regionPixelateGrid() throws {
        let image = Images.natural(200, 120)
        let whole = try FiltersTests.render(Pixelate(size: 16), image)
        let out = try Self.render("pixelate size=16 region=40,32,64,48", image, at: 0)
        let box = PixelRect(x: 40, y: 32, width: 64, height: 48)
        #expect(Self.maxDifference(out, whole, in: box) == 0)
        #expect(Self.untouchedOutside([box], out, image))
    }

    @Test("feather fades the effect out outside the box: weight 1 − d/feather within one level; the box stays fully covered")
    func featherRamp() throws {
        let image = RGBImage(width: 200, height: 100)
        image.fill(r: 200, g: 100, b: 0)
        let out = try Self.render("invert region=50,20,60,60 feather=20", image, at: 0)
        // Along the row through the box's middle: x = 110 + d − 0.5 is d pixels (centre) right of it.
        for x in 100..<135 {
            let centre = Double(x) + 0.5
            let distance = max(0, centre - 110)
            let weight = max(0, 1 - distance / 20)
            let expected = 200 * (1 - weight) + 55 * weight
            #expect(abs(Double(out[x, 50].r) - expected) <= 1.01, "x \(x): \(out[x, 50].r) vs \(expected)")
        }
        #expect(out[60, 30].r == 55 && out[50, 20].r == 55 && out[109, 79].r == 55)
        #expect(Self.untouchedOutside([PixelRect(x: 30, y: 0, width: 100, height: 100)], out, image))
    }

    @Test("ellipse: pixels whose centres lie inside are filtered, the box's corners are not")
    func ellipseShape() throws {
        let image = RGBImage(width: 100, height: 100)
        image.fill(r: 10, g: 20, b: 30)
        let out = try Self.render("invert region=20,20,60,40 shape=ellipse", image, at: 0)
        for y in 20..<60 {
            for x in 20..<80 {
                let u = (Double(x) + 0.5 - 50) / 30, v = (Double(y) + 0.5 - 40) / 20
                let inside = u * u + v * v <= 1
                #expect(out[x, y].r == (inside ? 245 : 10), "(\(x), \(y))")
            }
        }
        #expect(Self.untouchedOutside([PixelRect(x: 20, y: 20, width: 60, height: 40)], out, image))
    }

    @Test("a region over the frame's edge is clipped; one wholly outside is an error naming it")
    func regionClipping() throws {
        let image = Images.natural(160, 90)
        let negated = try Oracle.libavfilter("negate", image)
        let out = try Self.render("invert region=140,70,100,100", image, at: 0)
        let clipped = PixelRect(x: 140, y: 70, width: 20, height: 20)
        #expect(Self.maxDifference(out, negated, in: clipped) == 0)
        #expect(Self.untouchedOutside([clipped], out, image))
        #expect(throws: FilterError.self) { try Self.render("invert region=170,10,20,20", image, at: 0) }
        do {
            _ = try Self.render("invert region=170,10,20,20", image, at: 0)
        } catch {
            #expect("\(error)".contains("region=170,10,20,20"), "\(error)")
        }
    }

    // MARK: Tracks

    static func write(_ text: String, _ name: String) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("timeline-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let url = dir.appendingPathComponent(name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    static let csv = """
        # a detector's output: two faces, a score column we ignore
        time,x,y,w,h,id,score
        0,10,10,40,30,a,0.91
        2,110,50,60,40,a,0.88
        0.5,200,0,20,20,b,0.5
        1.0,210,10,20,20,b,0.6
        """

    @Test("track: CSV and JSON give the same boxes; linear between keyframes; held `hold` s after the last; ids")
    func trackInterpolation() throws {
        let fromCSV = try Track.load(path: try Self.write(Self.csv, "faces.csv"), hold: 0.5)
        let json = """
            [{"time": 0, "x": 10, "y": 10, "w": 40, "h": 30, "id": "a"},
             {"time": 2, "x": 110, "y": 50, "w": 60, "h": 40, "id": "a"},
             {"time": 0.5, "x": 200, "y": 0, "w": 20, "h": 20, "id": "b", "score": 0.5},
             {"time": 1.0, "x": 210, "y": 10, "w": 20, "h": 20, "id": "b"}]
            """
        let fromJSON = try Track.load(path: try Self.write(json, "faces.json"), hold: 0.5)
        #expect(fromCSV == fromJSON)
        #expect(fromCSV.boxes(at: 1) == [Box(x: 60, y: 30, width: 50, height: 35), Box(x: 210, y: 10, width: 20, height: 20)])
        #expect(fromCSV.boxes(at: 0.25) == [Box(x: 22.5, y: 15, width: 42.5, height: 31.25)], "b starts at 0.5 s")
        #expect(fromCSV.boxes(at: 0.75).count == 2)
        #expect(fromCSV.boxes(at: 1.5).count == 2, "b held until 1.5 s")
        #expect(fromCSV.boxes(at: 1.51).count == 1, "b gone after 1.5 s")
        #expect(fromCSV.boxes(at: 2.5) == [Box(x: 110, y: 50, width: 60, height: 40)], "a held until 2.5 s")
        #expect(fromCSV.boxes(at: 2.51).isEmpty)
        // No ids: the k-th box at each time is object k.
        let anonymous = try Track.load(path: try Self.write("time,x,y,w,h\n0,0,0,10,10\n0,100,0,10,10\n1,10,0,10,10\n1,110,0,10,10\n", "anon.csv"))
        #expect(anonymous.boxes(at: 0.5) == [Box(x: 5, y: 0, width: 10, height: 10), Box(x: 105, y: 0, width: 10, height: 10)])
    }

    @Test("a tracked mosaic covers every box it touches at each tick and nothing else, clipped at the edge")
    func trackedPixelate() throws {
        let path = try Self.write("time,x,y,w,h\n0,-20,-10,60,40\n1,260,150,60,40\n", "edge.csv")
        let image = Images.natural(320, 180)
        let whole = try FiltersTests.render(Pixelate(size: 8), image)
        // The boxes clipped to the picture; the mosaic's work area is widened to the block grid, but
        // only the box is written.
        for (t, covered) in [(0.0, PixelRect(x: 0, y: 0, width: 40, height: 30)),
                             (1.0, PixelRect(x: 260, y: 150, width: 60, height: 30))] {
            let out = try Self.render("pixelate size=8 track=\(path) hold=0", image, at: t)
            #expect(Self.maxDifference(out, whole, in: covered) == 0, "at \(t)")
            #expect(Self.untouchedOutside([covered], out, image), "at \(t)")
        }
        let after = try Self.render("pixelate size=8 track=\(path) hold=0", image, at: 1.01)
        #expect(Self.maxDifference(after, image) == 0, "no box after the last keyframe with hold=0")
    }

    @Test("bad track files: the message names the file, the line or object, and what is expected",
          arguments: [
              ("time,x,y,w\n0,1,2,3\n", "t1.csv", "lacks h"),
              ("time,x,y,w,h\n0,1,2,3,abc\n", "t2.csv", "line 2: h 'abc' is not a number"),
              ("time,x,y,w,h,id\n0,1,2,3,4,a\n0,5,6,7,8,a\n", "t3.csv", "two boxes at 0 s"),
              ("[{\"time\": 0, \"x\": 1, \"y\": 2, \"w\": 3}]", "t4.json", "object 1 has no \"h\""),
              ("time,x,y,w,h\n-1,1,2,3,4\n", "t5.csv", "negative"),
          ])
    func badTracks(text: String, name: String, message: String) throws {
        let path = try Self.write(text, name)
        do {
            _ = try FilterChain(parsing: "blur 8 track=\(path)")
            Issue.record("\(name) was accepted")
        } catch {
            #expect("\(error)".contains(message) && "\(error)".contains(path), "\(error)")
        }
        do {
            _ = try FilterChain(parsing: "blur 8 track=/nonexistent/faces.csv")
        } catch {
            #expect("\(error)".contains("no such file"), "\(error)")
        }
    }

    // MARK: Grammar

    @Test("the timeline grammar refuses what cannot work, naming the token", arguments: [
        ("scale 100x100 enable=1-2", "keeps the picture's size"),
        ("rotate 0@0,90@1", "changes the picture's size"),
        ("invert enable=5-2", "'5-2' for enable"),
        ("invert enable=abc", "START-END"),
        ("blur sigma=1@2,3@1", "keyframes"),
        ("invert hold=1", "hold= is for track="),
        ("invert feather=4", "give region= or track="),
        ("invert region=1,2,3", "x,y,w,h"),
        ("invert shape=star region=0,0,5,5", "rect|ellipse"),
        ("invert region=0,0,5,5 region=1,1,5,5", "given twice"),
    ])
    func grammarErrors(chain text: String, message: String) throws {
        do {
            let chain = try FilterChain(parsing: text)
            _ = try chain.outputSize(for: FrameSize(640, 360))
            Issue.record("\(text) was accepted")
        } catch let error as ChainSyntaxError {
            #expect(error.description.contains(message), "\(error)")
        } catch let error as FilterError {
            #expect(error.description.contains(message), "\(error)")
        }
    }

    @Test("a timed chain's text parses back to the same chain")
    func roundTrip() throws {
        let text = "blur sigma=0@0,12@2 region=10%,10%,50,50 shape=ellipse feather=8 | invert enable=1-2,4- | rotate 90 | sharpen amount=0.5@0,2@3"
        let chain = try FilterChain(parsing: text)
        #expect(chain.description == text)
        #expect(try FilterChain(parsing: chain.description).description == text)
    }
}
