import Filters
import Foundation
import Testing

/// `text` against libavfilter's drawtext (the same FreeType, the same font file), its tokens at
/// tick times, the quoting grammar and font errors.
@Suite struct TextTests {
    static let font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

    /// Ink: the sum of the red channel over a picture that was black, and the box it lies in.
    static func ink(_ image: RGBImage) -> (sum: Int, box: PixelRect?) {
        var sum = 0, x0 = Int.max, y0 = Int.max, x1 = -1, y1 = -1
        for y in 0..<image.height {
            for x in 0..<image.width {
                let v = Int(image[x, y].r)
                guard v > 0 else { continue }
                sum += v
                (x0, y0, x1, y1) = (min(x0, x), min(y0, y), max(x1, x), max(y1, y))
            }
        }
        return (sum, x1 < 0 ? nil : PixelRect(x: x0, y: y0, width: x1 - x0 + 1, height: y1 - y0 + 1))
    }

    @Test("the glyphs are drawtext's: the same ink (±1 %) in a box of the same size (±1 px); aligned, ≥ 30 dB",
          .enabled(if: FileManager.default.fileExists(atPath: font), "needs fonts-dejavu-core"),
          arguments: ["Hello 123", "Tg,jy Q@", "{frame}"])
    func glyphsMatchDrawtext(text: String) throws {
        let black = RGBImage(width: 360, height: 120)
        let ours = try TimelineTests.render("text \"\(text)\" x=20 y=30 size=40 font=\(Self.font)", black, at: 0)
        let shown = text.replacingOccurrences(of: "{frame}", with: "0")
        let escaped = shown.replacingOccurrences(of: ",", with: "\\,").replacingOccurrences(of: "@", with: "\\@")
        let theirs = try Oracle.libavfilter("drawtext=fontfile=\(Self.font):text='\(escaped)':fontsize=40:fontcolor=white:x=20:y=30", black)
        let a = Self.ink(ours), b = Self.ink(theirs)
        let boxA = try #require(a.box), boxB = try #require(b.box)
        #expect(abs(Double(a.sum - b.sum)) / Double(b.sum) <= 0.01, "ink \(a.sum) vs drawtext's \(b.sum)")
        #expect(abs(boxA.width - boxB.width) <= 1 && abs(boxA.height - boxB.height) <= 1, "ink box \(boxA) vs \(boxB)")
        #expect(abs(boxA.x - boxB.x) <= 2, "left edge \(boxA.x) vs \(boxB.x)")
        let w = min(boxA.width, boxB.width), h = min(boxA.height, boxB.height)
        let cropA = try FiltersTests.render(Crop(width: w, height: h, x: boxA.x, y: boxA.y), ours)
        let cropB = try FiltersTests.render(Crop(width: w, height: h, x: boxB.x, y: boxB.y), theirs)
        let db = TimelineTests.psnr(cropA, cropB, in: PixelRect(x: 0, y: 0, width: w, height: h))
        #expect(db >= 30, "aligned glyphs: \(db) dB")
    }

    @Test("tokens at tick times: {time} hh:mm:ss.mmm, {frame}, {pts}, {date} in UTC; \\n a new line")
    func tokens() throws {
        let text = Text("{time}|{frame}|{pts}|{date}", font: FontFile(path: Self.font))
        let time = FrameTime(seconds: 3661.5, frame: 109845, sourceSeconds: 12.0416, wallClock: 1_795_000_000)
        #expect(text.isTimeDependent)
        let parts = Self.expanded(text, time).split(separator: "|")
        #expect(parts == ["01:01:01.500", "109845", "12.042", "2026-11-18 11:06:40 UTC"])
        #expect(!Text("plain", font: FontFile(path: Self.font)).isTimeDependent)
        // Tick 45 at 30 fps is 1.5 s.
        #expect(Self.expanded(Text("{time}", font: FontFile(path: Self.font)), FrameTime(seconds: 45.0 / 30, frame: 45)) == "00:00:01.500")
    }

    static func expanded(_ text: Text, _ time: FrameTime) -> String { text.expanded(at: time) }

    @Test("quoted text keeps spaces, | and #; a new line stacks below; the chain prints it back quoted")
    func quoting() throws {
        let chain = try FilterChain(parsing: #"text "a | b # c \"q\"" size=20 font=\#(Self.font) | mirror"#)
        #expect(chain.filters.count == 2)
        let text = try #require(chain.filters.first as? Text)
        #expect(text.template == #"a | b # c "q""#)
        #expect(try FilterChain(parsing: chain.description).description == chain.description)
        #expect(throws: ChainSyntaxError.unterminatedQuote) { try FilterChain(parsing: #"text "open"#) }
        let file = try FilterChain(parsingFile: "text \"#1\" font=\(Self.font) # a comment\n")
        #expect((file.filters.first as? Text)?.template == "#1")
        let black = RGBImage(width: 200, height: 120)
        let one = Self.ink(try TimelineTests.render("text \"A\" size=30 font=\(Self.font)", black, at: 0)).box
        let two = Self.ink(try TimelineTests.render("text \"A\\nA\" size=30 font=\(Self.font)", black, at: 0)).box
        #expect((two?.height ?? 0) > 2 * (one?.height ?? 0), "\(String(describing: one)) \(String(describing: two))")
    }

    @Test("fonts: a missing or unreadable font is an error naming it")
    func fontErrors() {
        for (font, message) in [("/nonexistent/font.ttf", "no such file"), ("/etc/hostname", "not a font")] {
            do {
                _ = try FilterChain(parsing: "text hi font=\(font)")
                Issue.record("\(font) was accepted")
            } catch {
                #expect("\(error)".contains(font) && "\(error)".contains(message), "\(error)")
            }
        }
    }
}

/// A NUL in a chain is refused: `Double(_:)` stops reading at one, so `y=1"\0\""` read as 1 and
/// printed back unquoted (FuzzChainGrammar's find, 2026-11-26).
@Test func chainsWithANulAreRefused() {
    #expect(throws: ChainSyntaxError.nulCharacter) { try FilterChain(parsing: "text \"\"\0 y=1\"\0\\\"\"") }
    #expect(throws: ChainSyntaxError.nulCharacter) { try FilterChain(parsing: "blur sigma=6\0") }
    #expect((try? FilterChain(parsing: "text \"a\\tb\" y=1")) != nil)
}
