import Foundation

/// One output of a run — a container file, a PNG sequence, an HLS rendition, a master playlist, a
/// report, a snapshot — with one life cycle:
///
/// - `init` checks the destination (folder, existing name, `overwrite`) and creates nothing;
/// - `begin()` creates temporary files and writes headers. Nothing is visible under the final name
///   yet, except what a live or event HLS output publishes by design (see `HLSWriter`);
/// - writing, in the artifact's own terms (packets, bytes, renditions);
/// - `commit()` finishes and publishes atomically: after it the output is complete;
/// - `discard()` removes every unfinished file. It is idempotent, a no-op after `commit`, and never
///   throws. A run that fails, is cancelled or is stopped without finishing calls it on every
///   artifact; the process may exit before an artifact is released, so this cannot wait for `deinit`.
///
/// There are no default implementations: a wrapper must implement, and so forward, each requirement.
public protocol OutputArtifact: AnyObject {
    /// The output's name as the user gave it, for messages.
    var displayPath: String { get }
    func begin() throws(MediaError)
    func commit() throws(MediaError)
    func discard()
}

/// Where encoded packets go: one container file (`Muxer`), a PNG sequence (`ImageSequenceWriter`)
/// or an HLS rendition (`HLSWriter`).
///
/// The order of calls is: `addStream` for every stream, `begin`, any number of `write`, then
/// `commit` once — or `discard` at any point.
public protocol PacketSink: OutputArtifact {
    /// Whether encoders must put codec headers in extradata (AV_CODEC_FLAG_GLOBAL_HEADER).
    var wantsGlobalHeader: Bool { get }
    /// Adds a stream fed by `encoder`; returns its index in this sink.
    func addStream(from encoder: Encoder) throws(MediaError) -> Int
    /// Adds a stream whose packets are copied from `demuxer`'s stream `index`.
    func addStream(copying index: Int, of demuxer: Demuxer) throws(MediaError) -> Int
    /// Writes a packet whose timestamps are in `timeBase`.
    func write(_ packet: Packet, toStream index: Int, timeBase: Rational) throws(MediaError)
    /// Bytes written so far.
    var bytesWritten: Int64 { get }
}

/// A sink shared by threads (video from an encode thread, audio from the decode thread): one call
/// at a time reaches the wrapped sink. Forwards every requirement of `PacketSink` and
/// `OutputArtifact` (a test checks each one).
public final class LockedSink: PacketSink, @unchecked Sendable {
    public let base: any PacketSink
    private let lock = NSLock()

    public init(_ base: any PacketSink) { self.base = base }

    private func locked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    public var displayPath: String { locked { base.displayPath } }
    public var wantsGlobalHeader: Bool { locked { base.wantsGlobalHeader } }
    public var bytesWritten: Int64 { locked { base.bytesWritten } }

    public func addStream(from encoder: Encoder) throws(MediaError) -> Int {
        try locked { () throws(MediaError) in try base.addStream(from: encoder) }
    }
    public func addStream(copying index: Int, of demuxer: Demuxer) throws(MediaError) -> Int {
        try locked { () throws(MediaError) in try base.addStream(copying: index, of: demuxer) }
    }
    public func begin() throws(MediaError) {
        try locked { () throws(MediaError) in try base.begin() }
    }
    public func write(_ packet: Packet, toStream index: Int, timeBase: Rational) throws(MediaError) {
        try locked { () throws(MediaError) in try base.write(packet, toStream: index, timeBase: timeBase) }
    }
    public func commit() throws(MediaError) {
        try locked { () throws(MediaError) in try base.commit() }
    }
    public func discard() {
        locked { base.discard() }
    }
}
