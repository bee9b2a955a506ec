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
