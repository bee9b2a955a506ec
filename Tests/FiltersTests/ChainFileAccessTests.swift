import Filters
import Foundation
import Testing

/// Which files a chain's text may make the program read (`ChainFileAccess`): any (the operator's
/// chain), none, or only those in a folder — judged before the file is touched, so a refusal reads
/// the same whether or not the file exists; a chain edit goes through the same gate.
@Suite(.serialized) struct ChainFileAccessTests {
    /// `inside/` is the folder a change may read from: logo.png (white), faces.csv, sub/, and links
    /// — alias.png to logo.png, subalias to sub, and four that lead out. `outside/` beside it holds
    /// secret.png (red) and secret.csv.
    struct Folders {
        let root: URL
        var inside: URL { root.appendingPathComponent("inside") }
        var outside: URL { root.appendingPathComponent("outside") }
        /// The folder's real path, as admitted files are named.
        let realInside: String
        let access: ChainFileAccess

        init(_ name: String) throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("chain-files-\(getpid())-\(name)")
            try? FileManager.default.removeItem(at: root)
            let fm = FileManager.default
            try fm.createDirectory(at: root.appendingPathComponent("inside/sub"), withIntermediateDirectories: true)
            try fm.createDirectory(at: root.appendingPathComponent("outside"), withIntermediateDirectories: true)
            let white = try OverlayTests.png("access-white.png", size: "8x8", graph: "format=rgba,geq=r=255:g=255:b=255:a=255", format: "rgba")
            let red = try OverlayTests.png("access-red.png", size: "8x8", graph: "format=rgba,geq=r=255:g=0:b=0:a=255", format: "rgba")
            let inside = root.appendingPathComponent("inside"), outside = root.appendingPathComponent("outside")
            try fm.copyItem(atPath: white, toPath: inside.appendingPathComponent("logo.png").path)
            try fm.copyItem(atPath: red, toPath: outside.appendingPathComponent("secret.png").path)
            let track = "time,x,y,w,h\n0,0,0,4,4\n"
            try track.write(to: inside.appendingPathComponent("faces.csv"), atomically: true, encoding: .utf8)
            try track.write(to: outside.appendingPathComponent("secret.csv"), atomically: true, encoding: .utf8)
            for (link, target) in [("alias.png", "logo.png"), ("subalias", "sub"), ("escape.png", outside.appendingPathComponent("secret.png").path),
                                   ("relescape.png", "../outside/secret.png"), ("dangling.png", outside.appendingPathComponent("missing.png").path),
                                   ("outdir", outside.path)] {
                try fm.createSymbolicLink(atPath: inside.appendingPathComponent(link).path, withDestinationPath: target)
            }
            realInside = URL(fileURLWithPath: inside.path).resolvingSymlinksInPath().path
            access = try .within(inside.path)
        }

        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    /// The refusal `text` meets, nil when it parses.
    static func refusal(_ text: String, files: ChainFileAccess) -> ChainSyntaxError? {
        do {
            _ = try FilterChain(parsing: text, files: files)
            return nil
        } catch {
            return error
        }
    }

    @Test("none: every file a text names is refused — existing or not, image, track or font — and the default font still works")
    func noFiles() throws {
        let folders = try Folders("none")
        defer { folders.remove() }
        let secret = folders.outside.appendingPathComponent("secret.png").path
        let cases: [(String, String, String, String)] = [
            ("overlay \(secret)", "overlay", "file", secret),
            ("overlay /nonexistent/logo.png", "overlay", "file", "/nonexistent/logo.png"),
            ("overlay logo.png x=4", "overlay", "file", "logo.png"),
            ("blur 2 track=/etc/passwd", "blur", "track", "/etc/passwd"),
            ("invert track=/nonexistent/faces.csv", "invert", "track", "/nonexistent/faces.csv"),
            ("text hi font=/etc/shadow", "text", "font", "/etc/shadow"),
        ]
        for (text, filter, key, path) in cases {
            #expect(Self.refusal(text, files: .none) == .fileNotAllowed(filter: filter, key: key, path: path, folder: false), "\(text)")
        }
        // The same words whether the file exists or not, and nothing of what it holds.
        let existing = try #require(Self.refusal("overlay /etc/passwd", files: .none))
        let missing = try #require(Self.refusal("overlay /etc/passwf", files: .none))
        #expect("\(existing)".replacingOccurrences(of: "/etc/passwd", with: "P") == "\(missing)".replacingOccurrences(of: "/etc/passwf", with: "P"))
        #expect(!"\(existing)".contains("root"))
        #expect(Self.refusal("blur 3 | mirror", files: .none) == nil)
        if FileManager.default.fileExists(atPath: TextTests.font) {
            #expect(Self.refusal("text hi", files: .none) == nil, "the default font is the program's, not the text's")
        }
    }

    @Test("within: a relative path starts in the folder; inside paths, .. and links that stay inside are admitted and named by their real path")
    func withinAdmits() throws {
        let folders = try Folders("admits")
        defer { folders.remove() }
        let logo = folders.realInside + "/logo.png"
        for spelled in ["logo.png", "./sub/../logo.png", folders.inside.path + "/logo.png", logo, "alias.png", "subalias/../logo.png"] {
            let chain = try FilterChain(parsing: "overlay \(spelled) x=1", files: folders.access)
            let overlay = try #require(chain.filters.first as? Overlay)
            #expect(overlay.path == logo, "\(spelled) → \(overlay.path)")
            #expect(overlay.image.pixels[0] == 255 && overlay.image.pixels[1] == 255, "the white logo")
            // The text names the file it read, so it reads the same file wherever it is parsed again.
            #expect(try FilterChain(parsing: chain.description).description == chain.description)
            #expect(try FilterChain(parsing: chain.description, files: folders.access).description == chain.description)
        }
        let tracked = try FilterChain(parsing: "pixelate 4 track=faces.csv", files: folders.access)
        #expect(tracked.description.contains("track=\(folders.realInside)/faces.csv"), "\(tracked)")
        // A missing file inside the folder is an ordinary error: the folder is the change's to read.
        let missing = try #require(Self.refusal("overlay nothing.png", files: folders.access))
        guard case let .badValue(_, key, _, expected) = missing else { Issue.record("\(missing)"); return }
        #expect(key == "file" && expected.contains("no such file"), "\(missing)")
    }

    @Test("within: a way out — .., an absolute path, a link out (absolute or relative, to a file or a folder, dangling) — is refused, the same words whether the file exists or not")
    func withinRefuses() throws {
        let folders = try Folders("refuses")
        defer { folders.remove() }
        let outside = folders.outside.path
        let ways = ["../outside/secret.png", "../outside/missing.png", "\(outside)/secret.png", "\(outside)/missing.png",
                    "escape.png", "relescape.png", "dangling.png", "outdir/secret.png", "outdir/missing.png",
                    "sub/../../outside/secret.png", "subalias/../../outside/secret.png", "..", "/etc/passwd", "/etc/shadow",
                    "/nonexistent/logo.png", "\(folders.inside.path)/../outside/secret.png", "logo.png\u{0}/../../outside/secret.png"]
        var texts = Set<String>()
        for path in ways {
            let quoted = "\"" + path + "\""
            let error = Self.refusal("overlay \(quoted)", files: folders.access)
            if path.contains("\u{0}") {
                #expect(error != nil, "a NUL in the path")
                continue
            }
            #expect(error == .fileNotAllowed(filter: "overlay", key: "file", path: path, folder: true), "\(path): \(String(describing: error))")
            texts.insert(String(describing: error).replacingOccurrences(of: "'\(path)'", with: "'PATH'"))
        }
        #expect(texts.count == 1, "one refusal for every way out: \(texts)")
        #expect(Self.refusal("blur 2 track=../outside/secret.csv", files: folders.access)
            == .fileNotAllowed(filter: "blur", key: "track", path: "../outside/secret.csv", folder: true))
        #expect(Self.refusal("text hi font=/etc/hostname", files: folders.access)
            == .fileNotAllowed(filter: "text", key: "font", path: "/etc/hostname", folder: true))
    }

    @Test("within: the folder must exist and be a folder")
    func withinNeedsAFolder() throws {
        let folders = try Folders("folder")
        defer { folders.remove() }
        #expect(throws: ChainFileAccess.FolderError.self) { try ChainFileAccess.within(folders.root.appendingPathComponent("absent").path) }
        #expect(throws: ChainFileAccess.FolderError.self) { try ChainFileAccess.within(folders.inside.appendingPathComponent("logo.png").path) }
        #expect(throws: ChainFileAccess.FolderError.self) { try ChainFileAccess.within("") }
        _ = try ChainFileAccess.within(folders.inside.appendingPathComponent("subalias").path)
    }

    @Test("a chain edit (FILTER.key=value) goes through the same gate; the files the running chain reads are kept, unchanged filters are not read again")
    func chainEdits() throws {
        let folders = try Folders("edits")
        defer { folders.remove() }
        let secret = folders.outside.appendingPathComponent("secret.png").path
        // The operator's chain reads a file outside any folder.
        let running = try FilterChain(parsing: "overlay \(secret) | blur 2")
        let opacity = try running.applying("overlay.opacity=0.5", files: .none)
        #expect(opacity.description.hasPrefix("overlay \(secret) ") && opacity.description.contains("opacity=0.5"), "\(opacity)")
        let sigma = try running.applying("blur.sigma=3", files: .none)
        #expect((sigma.filters[0] as? Overlay)?.image === (running.filters[0] as? Overlay)?.image, "the overlay is kept, not read again")
        func refused(_ edit: String, _ files: ChainFileAccess) -> ChainSyntaxError? {
            do { _ = try running.applying(edit, files: files); return nil } catch { return error }
        }
        #expect(refused("overlay.file=/etc/passwd", .none) == .fileNotAllowed(filter: "overlay", key: "file", path: "/etc/passwd", folder: false))
        #expect(refused("blur.track=/etc/passwd", .none) == .fileNotAllowed(filter: "blur", key: "track", path: "/etc/passwd", folder: false))
        #expect(refused("file=escape.png", folders.access) == .fileNotAllowed(filter: "overlay", key: "file", path: "escape.png", folder: true))
        #expect(refused("2.track=../outside/secret.csv", folders.access)
            == .fileNotAllowed(filter: "blur", key: "track", path: "../outside/secret.csv", folder: true))
        let inside = try running.applying("1.file=logo.png", files: folders.access)
        #expect((inside.filters[0] as? Overlay)?.path == folders.realInside + "/logo.png")
        // A whole chain may name the running chain's files again, as its text writes them.
        let kept = ChainFileAccess.none.keeping(filesOf: running)
        #expect(Self.refusal("overlay \(secret) opacity=0.5 | blur 4", files: kept) == nil)
        #expect(Self.refusal("overlay \(folders.outside.path)/../outside/secret.png", files: kept) != nil, "only as written")
    }

    @Test("a file admitted within the folder and then swapped for a link out is not followed when it is read again")
    func swappedForALink() throws {
        let folders = try Folders("swap")
        defer { folders.remove() }
        let black = RGBImage(width: 16, height: 8)
        black.fill(r: 0, g: 0, b: 0)
        // Keyframed opacity: the overlay is built again (and its file read) when the value changes.
        let confined = try FilterChain(parsing: "overlay logo.png opacity=0.5@0,1@1", files: folders.access)
        let operators = try FilterChain(parsing: "overlay \(folders.realInside)/logo.png opacity=0.5@0,1@1")
        let logo = folders.inside.appendingPathComponent("logo.png").path
        // Both running (renderers made, the file read) before the swap.
        let renderers = try [confined, operators].map { try ChainRenderer(chain: $0, inputSize: black.size) }
        for renderer in renderers { _ = renderer.render(black, at: .zero) }
        func red(_ renderer: ChainRenderer) -> Bool {
            let out = renderer.render(black, at: FrameTime(seconds: 1, frame: 30))
            return out[4, 4].r == 255 && out[4, 4].g == 0
        }
        try FileManager.default.removeItem(atPath: logo)
        try FileManager.default.createSymbolicLink(atPath: logo, withDestinationPath: folders.outside.appendingPathComponent("secret.png").path)
        #expect(!red(renderers[0]), "the confined chain does not follow the new link")
        #expect(red(renderers[1]), "the operator's chain does (the test can tell)")
    }
}
