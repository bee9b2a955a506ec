import Filters
import Testing

@Suite struct GrammarTests {
    @Test(arguments: [
        "blur sigma=6", "blur 6", "blur 0.5", "blur sigma=12 x=10 y=20 w=200 h=100",
        "rotate 90", "rotate 180", "rotate 270", "rotate -90", "rotate 33.5", "rotate 33.5 keep", "rotate 33.5 expand fill=#FF8000",
        "rotate -12.25 mode=keep fill=#00ff00", "mirror", "mirror horizontal", "mirror vertical", "mirror axis=vertical",
        "scale 1280x720", "scale fit=1280x720", "scale width=640", "scale height=360", "scale max=1280",
        "scale 1280x720 method=bilinear", "scale max=640 method=area", "scale width=320 bicubic", "crop 640x360+10+20",
        "scale fit=1280x720 | blur 6 | rotate 90 | mirror | crop 100x100+0+0",
    ])
    func roundTrips(text: String) throws {
        let chain = try FilterChain(parsing: text)
        let again = try FilterChain(parsing: chain.description)
        #expect(again.description == chain.description)
        #expect(try again.outputSize(for: FrameSize(1920, 1080)) == chain.outputSize(for: FrameSize(1920, 1080)))
    }

    @Test func parsesToTheRightFilters() throws {
        let chain = try FilterChain(parsing: "blur 6 | rotate 33.5 keep fill=#102030 | mirror vertical | scale fit=1280x720 method=area | crop 64x36+1+2")
        #expect(chain.filters.count == 5)
        #expect(chain.filters[0] as? GaussianBlur == GaussianBlur(sigma: 6))
        #expect(chain.filters[1] as? Rotate == Rotate(degrees: 33.5, canvas: .keep, fill: RGBColor(r: 16, g: 32, b: 48)))
        #expect(chain.filters[2] as? Mirror == Mirror(axis: .vertical))
        #expect(chain.filters[3] as? Scale == Scale(.fit(FrameSize(1280, 720)), method: .area))
        #expect(chain.filters[4] as? Crop == Crop(width: 64, height: 36, x: 1, y: 2))
        #expect(chain.description == "blur sigma=6 | rotate 33.5 keep fill=#102030 | mirror vertical | scale fit=1280x720 method=area | crop 64x36+1+2")
        #expect(try FilterChain(parsing: "  ").isEmpty)
    }

    @Test func fileForm() throws {
        let text = """
        # preset: privacy blur then rotate
        scale max=1280   # keep it small

        blur sigma=12 x=10 y=20 w=200 h=100
        rotate 90
        """
        let chain = try FilterChain(parsingFile: text)
        #expect(chain.description == "scale max=1280 | blur sigma=12 x=10 y=20 w=200 h=100 | rotate 90")
        #expect(throws: ChainSyntaxError.onLine(3, .unknownFilter(name: "blurr", validNames: ["blur", "rotate", "mirror", "scale", "crop", "invert", "pixelate", "boxblur", "sharpen", "grayscale", "overlay", "text", "fade", "eq"]))) {
            try FilterChain(parsingFile: "# c\nmirror\nblurr 3\n")
        }
    }

    /// Separators followed by a combining mark form one `Character` with it (" \u{738}", "|\u{301}",
    /// "=\u{301}", "\r\n"); the grammar splits on scalars, so a printed chain reads back the same
    /// (the first text is what libFuzzer found: a vertical tab, then a Syriac mark).
    @Test(arguments: [
        "text\u{0B}\u{738}\u{FFFD}\u{10}-", "text \u{301}a", "mirror |\u{301}", "text a=\u{301}b", "text \u{301}\u{A0}",
    ])
    func combiningMarksAfterSeparators(text: String) throws {
        let chain = try? FilterChain(parsing: text)
        guard let chain else { return }  // an error is fine; a chain must print and read back the same
        let again = try FilterChain(parsing: chain.description)
        #expect(again.description == chain.description)
    }

    @Test func separatorsAreScalarsNotGraphemes() throws {
        let chain = try FilterChain(parsing: "text \u{301}a x=4")
        #expect(chain.description == "text \u{301}a x=4 y=16 size=32 color=#FFFFFF")
        // A chain file saved with CRLF line ends (\r\n is a single Character) is still one filter a line.
        let file = try FilterChain(parsingFile: "mirror\r\n# comment\r\nblur 6\r\n")
        #expect(file.description == "mirror horizontal | blur sigma=6")
        #expect(throws: ChainSyntaxError.self) { try FilterChain(parsing: "mirror |\u{301}") }
    }

    @Test(arguments: [
        ("blurr 3", "blurr", "blur, rotate, mirror, scale, crop"),
        ("blur sigma=6 radius=3", "radius", "sigma, x, y, w, h"),
        ("blur -1", "-1", "0…100"),
        ("blur sigma=200", "200", "0…100"),
        ("rotate 33 sideways", "sideways", "expand|keep"),
        ("rotate 10 fill=red", "red", "#RRGGBB"),
        ("mirror diagonal", "diagonal", "horizontal|vertical"),
        ("scale 1280x", "1280x", "WxH"),
        ("scale method=lanczos width=3", "lanczos", "bilinear|bicubic|area"),
        ("crop 640x360+10", "640x360+10", "WxH+X+Y"),
        ("mirror | | blur 2", "|#2", "'|'"),
    ])
    func errorsNameTheTokenAndTheChoices(text: String, token: String, hint: String) {
        do {
            _ = try FilterChain(parsing: text)
            Issue.record("'\(text)' parsed")
        } catch {
            #expect(error.description.contains(token) || error.token.contains(token), "\(error)")
            #expect(error.description.contains(hint), "\(error)")
        }
    }

    @Test func typedErrors() {
        #expect(throws: ChainSyntaxError.unknownKey(filter: "mirror", key: "side", validKeys: ["axis", "enable", "region", "shape", "feather", "track", "hold"])) {
            try FilterChain(parsing: "mirror side=left")
        }
        #expect(throws: ChainSyntaxError.self) { try FilterChain(parsing: "scale 640x360 width=320") }
        #expect(throws: ChainSyntaxError.self) { try FilterChain(parsing: "blur 3 x=1 y=2") }
        #expect(throws: ChainSyntaxError.self) { try FilterChain(parsing: "blur sigma=3 sigma=4") }
        #expect(throws: ChainSyntaxError.self) { try FilterChain(parsing: "rotate") }
    }

    @Test func catalogDescribesEveryFilter() {
        #expect(FilterCatalog.definitions.map(\.name) == ["blur", "rotate", "mirror", "scale", "crop", "invert", "pixelate", "boxblur", "sharpen", "grayscale", "overlay", "text", "fade", "eq"])
        for definition in FilterCatalog.definitions {
            // A filter may take no parameter (invert), never no summary.
            #expect(!definition.summary.isEmpty && (!definition.parameters.isEmpty || definition.name == "invert"))
            for example in definition.examples {
                do {
                    _ = try FilterChain(parsing: example)
                } catch let error as ChainSyntaxError {
                    // An example may name a file the reader has (logo.png): then only that is missing.
                    guard case let .badValue(_, key, _, expected) = error, ["file", "track"].contains(key),
                          expected.contains("no such file") else {
                        Issue.record("example '\(example)': \(error)")
                        continue
                    }
                } catch {
                    Issue.record("example '\(example)': \(error)")
                }
            }
        }
    }
}
