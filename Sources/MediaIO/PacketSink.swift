/// Where encoded packets go: one container file (`Muxer`) or an HLS rendition (segments + playlist).
///
/// The order of calls is: `addStream` for every stream, `writeHeader`, any number of `write`,
/// then `finish` once. After `finish` the output is complete on disk.
public protocol PacketSink: AnyObject {
    /// Whether encoders must put codec headers in extradata (AV_CODEC_FLAG_GLOBAL_HEADER).
    var wantsGlobalHeader: Bool { get }
    /// Adds a stream fed by `encoder`; returns its index in this sink.
    func addStream(from encoder: Encoder) throws(MediaError) -> Int
    /// Adds a stream whose packets are copied from `demuxer`'s stream `index`.
    func addStream(copying index: Int, of demuxer: Demuxer) throws(MediaError) -> Int
    func writeHeader() throws(MediaError)
    /// Writes a packet whose timestamps are in `timeBase`.
    func write(_ packet: Packet, toStream index: Int, timeBase: Rational) throws(MediaError)
    func finish() throws(MediaError)
    /// Bytes written so far.
    var bytesWritten: Int64 { get }
    /// Removes any file the sink has open but not finished. Called when a run stops on an error:
    /// the process may exit before the sink is released, so this cannot wait for `deinit`.
    func discardUnfinished()
}

extension PacketSink {
    public func discardUnfinished() {}
}
