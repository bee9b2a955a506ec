import CFFmpeg
import class Filters.RGBImage
import Foundation

/// A numbered PNG sequence (`frames/%05d.png`) from the png encoder's packets: one file per picture,
/// numbered from 1 as FFmpeg's image2 muxer numbers them, each holding the packet's bytes.
///
/// Every frame is an `AtomicFile` that waits under its temporary name: `commit` renames them all,
/// in order; `discard` removes them. A failed run leaves no frame of its own, and the frames of an
/// earlier run as they were. An earlier sequence is recognised by its first file (refused without
/// `overwrite`); later files of the same names are replaced.
public final class ImageSequenceWriter: PacketSink {
    public let pattern: String
    public var displayPath: String { pattern }
    private let folder: String
    private let name: NumberedFileName
    private let frames = AtomicFileBatch()
    private var streamAdded = false
    private var begun = false
    private var committed = false
    private var discarded = false
    public private(set) var bytesWritten: Int64 = 0
    /// The number of the first file (1, or a shard's place in the whole sequence).
    private let firstNumber: Int

    /// Checks the pattern and the destination; creates nothing.
    public init(pattern: String, overwrite: Bool, firstNumber: Int = 1) throws(MediaError) {
        self.firstNumber = firstNumber
        guard let last = pattern.split(separator: "/").last, !last.contains("..") else {
            throw .unsupportedOutput(pattern, reason: "not a file pattern")
        }
        // The name reaches no format function, but one frame counter and nothing else keeps the
        // names what the user meant (a '%s' or '%n' used to crash the process), and no '%' in the folder.
        guard let name = NumberedFileName(last), !pattern.dropLast(last.count).contains("%") else {
            throw .unsupportedOutput(pattern, reason: "a PNG pattern needs exactly one %d or %0Nd in its file name and no other '%'")
        }
        self.pattern = pattern
        self.name = name
        folder = URL(fileURLWithPath: pattern).deletingLastPathComponent().path
        // The first file of the sequence already there means an earlier run: ask before replacing.
        try AtomicFile.checkDestination(folder + "/" + name.name(firstNumber), overwrite: overwrite)
    }

    public var wantsGlobalHeader: Bool { false }

    public func addStream(from encoder: Encoder) throws(MediaError) -> Int {
        guard encoder.codecName == "png" else { throw .invalidSettings("a PNG sequence takes the png encoder's pictures, not \(encoder.codecName)") }
        guard !streamAdded else { throw .invalidSettings("a PNG sequence holds one picture stream") }
        streamAdded = true
        return 0
    }

    public func addStream(copying index: Int, of demuxer: Demuxer) throws(MediaError) -> Int {
        throw .invalidSettings("a PNG sequence holds pictures only: no stream can be copied into it")
    }

    /// Nothing to create yet: each frame's file is created when its picture comes.
    public func begin() throws(MediaError) {
        guard streamAdded else { throw .invalidSettings("a PNG sequence needs its picture stream before it begins") }
        begun = true
    }

    public func write(_ packet: Packet, toStream index: Int, timeBase: Rational) throws(MediaError) {
        guard begun, !committed, !discarded else { throw .invalidSettings("ImageSequenceWriter.write called outside begin…commit") }
        let file = AtomicFile(unchecked: folder + "/" + name.name(frames.files.count + firstNumber), displayPath: pattern)
        try file.begin()
        if let data = packet.pointer.pointee.data, packet.size > 0 {
            try file.write(from: UnsafeRawPointer(data), count: packet.size)
        }
        try frames.add(file)
        bytesWritten += Int64(packet.size)
    }

    /// Publishes every frame, in order.
    public func commit() throws(MediaError) {
        guard begun, !committed, !discarded else { return }
        try frames.commit()
        committed = true
    }

    /// Removes every frame of this run (temporary, or published by an interrupted `commit`).
    public func discard() {
        guard !committed, !discarded else { return }
        discarded = true
        frames.discard()
    }
}

/// One RGB picture as PNG file bytes (FFmpeg's png encoder).
public func encodePNG(_ image: RGBImage) throws(MediaError) -> [UInt8] {
    let encoder = try Encoder.png(size: image.size, timeBase: Rational(1, 25))
    let frame = try Frame(copying: image)
    frame.presentationTimestamp = 0
    var bytes: [UInt8] = []
    do throws(FFmpegError) {
        try encoder.send(frame)
        try encoder.sendEndOfStream()
        while case let .packet(packet) = try encoder.receive() {
            bytes += packet.bytes
        }
    } catch {
        throw .processing(error)
    }
    return bytes
}
