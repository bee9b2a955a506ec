import CFFmpeg

/// How a container is laid out, as typed options; MediaIO turns them into FFmpeg's muxer options
/// (this file is the only place that names them).
public struct ContainerOptions: Sendable, Equatable {
    /// MP4 and MOV: the index (moov) goes before the media data, so a player can start before the
    /// whole file has arrived. Costs a second pass over the file at the end. Other containers refuse it.
    public var faststart: Bool
    /// fMP4 for HLS: the header is the init segment (ftyp + an empty moov) and each flush of the
    /// muxer writes one self-contained fragment (moof + mdat), which is one segment.
    var hlsFragments = false

    public init(faststart: Bool = false) {
        self.faststart = faststart
    }

    static let hlsFragmented: ContainerOptions = {
        var options = ContainerOptions()
        options.hlsFragments = true
        return options
    }()

    /// Refuses options the container cannot honour, before anything is written.
    func validate(for container: OutputContainer, path: String) throws(MediaError) {
        if faststart || hlsFragments, container != .mp4, container != .mov {
            throw .unsupportedOutput(path, reason: "faststart and fragments apply to MP4 and MOV files only")
        }
    }

    /// The muxer options, as `avformat_write_header` takes them (the caller frees the dictionary).
    func dictionary() -> OpaquePointer? {
        var movflags: [String] = []
        if faststart { movflags.append("+faststart") }
        // frag_custom: a fragment only when the writer flushes, i.e. one moof+mdat per segment.
        // empty_moov: ftyp+moov at the header = the init segment. default_base_moof: offsets relative
        // to each moof, so a segment stands alone. skip_trailer: no mfra index after the last segment.
        // frag_discont with an edit list: the first fragment's tfdt is the first packet's own time, not
        // zero, so fragments keep the writer's timeline (HLSWriter's fixed offset) and the segments
        // of a split job, each written by its own muxer, land where a single run puts them.
        if hlsFragments { movflags.append("+frag_custom+empty_moov+default_base_moof+skip_trailer+frag_discont") }
        var dict: OpaquePointer? = nil
        if !movflags.isEmpty { av_dict_set(&dict, "movflags", movflags.joined(), 0) }
        if hlsFragments { av_dict_set(&dict, "use_editlist", "1", 0) }
        return dict
    }

    /// MPEG-TS: PAT and PMT go out again before the next packet (a one-shot flag), so the next
    /// segment starts with them.
    static func resendTransportStreamHeaders(_ context: UnsafeMutablePointer<AVFormatContext>) {
        av_opt_set(context.pointee.priv_data, "mpegts_flags", "+resend_headers", 0)
    }
}
