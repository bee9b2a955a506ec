import CFFmpeg

// The one place the colour tags meet FFmpeg's AVColorSpace, AVColorPrimaries,
// AVColorTransferCharacteristic and AVColorRange. A tag's raw value is FFmpeg's name for its
// code, so FFmpeg's own name tables do the mapping and no code is copied here; the tests check
// that every code FFmpeg names (but "reserved") has a case and every case has a code.

extension ColorDescription {
    /// The tags in a stream's codec parameters.
    init(_ parameters: AVCodecParameters) {
        self.init(matrix: tag(named: av_color_space_name(parameters.color_space)) ?? .unspecified,
                  primaries: tag(named: av_color_primaries_name(parameters.color_primaries)) ?? .unspecified,
                  transfer: tag(named: av_color_transfer_name(parameters.color_trc)) ?? .unspecified,
                  range: tag(named: av_color_range_name(parameters.color_range)) ?? .limited)
    }

    /// FFmpeg's value for `matrix`.
    var avMatrix: AVColorSpace {
        code(of: matrix, av_color_space_from_name).map { AVColorSpace(rawValue: $0) } ?? AVCOL_SPC_UNSPECIFIED
    }

    /// FFmpeg's value for `primaries`.
    var avPrimaries: AVColorPrimaries {
        code(of: primaries, av_color_primaries_from_name).map { AVColorPrimaries(rawValue: $0) } ?? AVCOL_PRI_UNSPECIFIED
    }

    /// FFmpeg's value for `transfer`.
    var avTransfer: AVColorTransferCharacteristic {
        code(of: transfer, av_color_transfer_from_name).map { AVColorTransferCharacteristic(rawValue: $0) } ?? AVCOL_TRC_UNSPECIFIED
    }
}

/// The tag FFmpeg calls `name`; nil for a code FFmpeg names "reserved" or does not name.
private func tag<Tag: RawRepresentable<String>>(named name: UnsafePointer<CChar>?) -> Tag? {
    name.flatMap { Tag(rawValue: String(cString: $0)) }
}

/// FFmpeg's code for `tag`, found by its name (nil only if a raw value were misspelt).
private func code(of tag: some RawRepresentable<String>, _ codeNamed: (UnsafePointer<CChar>?) -> Int32) -> UInt32? {
    let code = codeNamed(tag.rawValue)
    return code >= 0 ? UInt32(code) : nil
}
