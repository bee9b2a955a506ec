import ArgumentParser
import Filters
import Foundation
import MediaIO
import Pipeline

struct SnapshotCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot",
        abstract: "Write the filtered frame at a time as PNG, a before|after comparison, or a contact sheet.")

    @Argument(help: "Input file or URL.")
    var input: String

    @Option(help: "Time in seconds: the newest frame at or before it (default: the middle of the input; past the end is an error).")
    var at: Double?

    @Option(help: "Filter chain.")
    var chain: String?

    @Option(help: "Read the chain from a file.")
    var chainFile: String?

    @Option(name: [.short, .long], help: "Output PNG path.")
    var output: String

    @Flag(help: "Write the unfiltered (upright) frame and the filtered one side by side.")
    var compare = false

    @Option(help: "A contact sheet of COLSxROWS filtered frames across the duration, e.g. 4x3.")
    var grid: GridSize?

    @Option(help: "Width of each contact-sheet cell in pixels.")
    var cellWidth = 320

    @Option(help: "auto: apply the input's rotation tag; keep: frames as stored.")
    var orientation: OrientationPolicy = .auto

    @Flag(name: [.customShort("y"), .long], help: "Replace an existing output.")
    var overwrite = false

    func validate() throws {
        if chain != nil && chainFile != nil { throw ValidationError("--chain and --chain-file cannot be used together") }
        if compare && grid != nil { throw ValidationError("--compare and --grid cannot be used together") }
        if let at, !(at >= 0 && at.isFinite) { throw ValidationError("--at must be a time in seconds, 0 or more") }
        if !(16...4096).contains(cellWidth) { throw ValidationError("--cell-width must be between 16 and 4096") }
        if !output.lowercased().hasSuffix(".png") { throw ValidationError("the snapshot output must be a .png file") }
    }

    func run() throws {
        let filterChain = try ChainArguments(chain: chain, chainFile: chainFile).parse()
        FFmpegLog.setLevel(.quiet)
        do {
            // Checked and begun before any decoding; published whole, or discarded on the way out.
            let file = try AtomicFile(path: output, overwrite: overwrite)
            try file.begin()
            defer { file.discard() }
            let snapshotter: Snapshotter
            do { snapshotter = try Snapshotter(input: input, chain: filterChain, orientation: orientation) } catch { throw CommandFailure(error) }
            let duration = snapshotter.duration ?? 0
            let image: RGBImage
            if let grid {
                image = try contactSheet(snapshotter, grid: grid, duration: duration)
            } else {
                // The newest frame with time ≤ --at; a time past the end is refused rather than guessed.
                if let at, let end = snapshotter.duration, at > end {
                    throw CommandFailure(String(format: "--at %g s is past the end of the input (%.3f s long); give a time from 0 to %.3f",
                                                at, end, end), code: .usage)
                }
                let time = at ?? duration / 2
                let shot: (before: RGBImage, after: RGBImage)
                do { shot = try snapshotter.frame(at: time) } catch { throw CommandFailure(error) }
                image = compare ? sideBySide(shot.before, shot.after) : shot.after
            }
            try file.write(encodePNG(image))
            try file.commit()
            Terminal.line("wrote \(output) (\(image.size))")
        } catch let error as MediaError {
            throw CommandFailure(error)
        }
    }

    private func sideBySide(_ left: RGBImage, _ right: RGBImage) -> RGBImage {
        let gap = 8
        let canvas = RGBImage(width: left.width + gap + right.width, height: max(left.height, right.height))
        canvas.fill(r: 24, g: 24, b: 24)
        canvas.draw(left, atX: 0, y: (canvas.height - left.height) / 2)
        canvas.draw(right, atX: left.width + gap, y: (canvas.height - right.height) / 2)
        return canvas
    }

    private func contactSheet(_ snapshotter: Snapshotter, grid: GridSize, duration: Double) throws -> RGBImage {
        let count = grid.columns * grid.rows
        var cells: [RGBImage] = []
        var cellSize: FrameSize?
        for i in 0..<count {
            let time = duration > 0 ? (Double(i) + 0.5) * duration / Double(count) : 0
            let after: RGBImage
            do { after = try snapshotter.frame(at: time).after } catch { throw CommandFailure(error) }
            let size = cellSize ?? aspectFit(after.size, in: FrameSize(cellWidth, cellWidth * 4))
            cellSize = size
            let fitted = aspectFit(after.size, in: size)
            do {
                let renderer = try Scale(width: fitted.width, height: fitted.height).makeRenderer(for: after.size)
                let cell = RGBImage(size: renderer.outputSize)
                renderer.render(after, into: cell)
                cells.append(cell)
            } catch {
                throw CommandFailure("cannot scale a frame for the contact sheet: \(error)", code: .badChain)
            }
        }
        let cell = cellSize!
        let gap = 4
        let sheet = RGBImage(width: grid.columns * cell.width + (grid.columns + 1) * gap,
                             height: grid.rows * cell.height + (grid.rows + 1) * gap)
        sheet.fill(r: 24, g: 24, b: 24)
        for (i, image) in cells.enumerated() {
            let x = gap + (i % grid.columns) * (cell.width + gap) + (cell.width - image.width) / 2
            let y = gap + (i / grid.columns) * (cell.height + gap) + (cell.height - image.height) / 2
            sheet.draw(image, atX: x, y: y)
        }
        return sheet
    }
}

/// COLSxROWS, e.g. 4x3.
struct GridSize: ExpressibleByArgument {
    var columns: Int
    var rows: Int

    init?(argument: String) {
        let parts = argument.lowercased().split(separator: "x")
        guard parts.count == 2, let c = Int(parts[0]), let r = Int(parts[1]), (1...16).contains(c), (1...16).contains(r) else { return nil }
        columns = c
        rows = r
    }
}

/// `--chain` / `--chain-file`, parsed before any file is opened.
struct ChainArguments {
    var chain: String?
    var chainFile: String?

    func parse() throws -> FilterChain {
        do {
            if let chainFile {
                guard let text = try? String(contentsOfFile: chainFile, encoding: .utf8) else {
                    throw CommandFailure("cannot read chain file '\(chainFile)'", code: .badChain)
                }
                return try FilterChain(parsingFile: text)
            }
            return try FilterChain(parsing: chain ?? "")
        } catch let error as ChainSyntaxError {
            throw CommandFailure("bad filter chain: \(error)", code: .badChain)
        }
    }
}
