import Foundation

/// The parts of `ffprobe -print_format json -show_streams -show_format` the tests look at.
/// ffprobe prints many numbers as strings (`"duration": "5.000000"`); the computed properties parse them.
struct ProbeInfo: Decodable, Sendable {
    var streams: [Stream]
    var format: Format?

    struct Stream: Decodable, Sendable {
        var index: Int
        var codecName: String?
        var codecType: String?
        var profile: String?
        /// H.264 level times ten (x264 level 3.1 is 31); -99 when unknown.
        var level: Int?
        var width: Int?
        var height: Int?
        var pixFmt: String?
        var colorRange: String?
        var colorSpace: String?
        var colorTransfer: String?
        var colorPrimaries: String?
        var rFrameRate: String?
        var avgFrameRate: String?
        var timeBase: String?
        var startTime: String?
        var duration: String?
        var bitRate: String?
        var nbFrames: String?
        /// Only with `-count_frames`.
        var nbReadFrames: String?
        var sampleRate: String?
        var channels: Int?
        var sideDataList: [SideData]?

        var isVideo: Bool { codecType == "video" }
        var isAudio: Bool { codecType == "audio" }
        var durationSeconds: Double? { duration.flatMap(Double.init) }
        var startSeconds: Double? { startTime.flatMap(Double.init) }
        var bitRateValue: Int? { bitRate.flatMap { Int($0) } }
        var readFrames: Int? { nbReadFrames.flatMap { Int($0) } }
        var frameRate: Double? { rFrameRate.flatMap(Rational.init)?.value }
        var sampleRateValue: Int? { sampleRate.flatMap { Int($0) } }

        /// The display-matrix side data, if any (outputs must not have one).
        var displayMatrix: SideData? {
            sideDataList?.first { $0.sideDataType == "Display Matrix" }
        }
        /// Rotation from the display matrix as ffprobe reports it (90 for samples/portrait-rotated.mp4).
        var rotation: Int { Int((displayMatrix?.rotation ?? 0).rounded()) }
        /// Size as shown by a player: width and height swapped for a ±90° display matrix.
        var displaySize: (width: Int, height: Int)? {
            guard let width, let height else { return nil }
            return abs(rotation) % 180 == 90 ? (height, width) : (width, height)
        }
    }

    struct SideData: Decodable, Sendable {
        var sideDataType: String?
        var rotation: Double?
    }

    struct Format: Decodable, Sendable {
        var formatName: String?
        var duration: String?
        var startTime: String?
        var size: String?
        var bitRate: String?
        var nbStreams: Int?

        var durationSeconds: Double? { duration.flatMap(Double.init) }
        var bitRateValue: Int? { bitRate.flatMap { Int($0) } }
    }

    var video: Stream? { streams.first(where: \.isVideo) }
    var audio: Stream? { streams.first(where: \.isAudio) }
    var audioStreams: [Stream] { streams.filter(\.isAudio) }
}

/// One video frame from `ffprobe -show_frames`.
struct FrameInfo: Decodable, Sendable {
    var keyFrame: Int?
    var pictType: String?
    var bestEffortTimestampTime: String?
    var pktDtsTime: String?
    var pktDurationTime: String?

    var isKey: Bool { keyFrame == 1 }
    var time: Double? { (bestEffortTimestampTime ?? pktDtsTime).flatMap(Double.init) }
    var durationSeconds: Double? { pktDurationTime.flatMap(Double.init) }
}

/// `"30000/1001"` as a number.
struct Rational: Sendable, Equatable {
    var numerator: Int
    var denominator: Int
    init?(_ text: String) {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let n = Int(parts[0]), let d = Int(parts[1]) else { return nil }
        numerator = n
        denominator = d
    }
    var value: Double? { denominator == 0 ? nil : Double(numerator) / Double(denominator) }
}

enum FFprobe {
    private static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }

    /// `ffprobe -v error -print_format json -show_streams -show_format [-count_frames] FILE`
    static func probe(_ url: URL, countFrames: Bool = false) async throws -> ProbeInfo {
        var arguments = ["-v", "error", "-print_format", "json", "-show_streams", "-show_format"]
        if countFrames { arguments.append("-count_frames") }
        let result = try await Subprocess.run(Paths.ffprobe, arguments + [url.path])
        guard result.succeeded else { throw ToolFailure(result) }
        return try decoder().decode(ProbeInfo.self, from: result.stdout)
    }

    /// Every frame of the first video stream, in presentation order as ffprobe decodes them.
    static func videoFrames(_ url: URL) async throws -> [FrameInfo] {
        struct Frames: Decodable { var frames: [FrameInfo] }
        let result = try await Subprocess.run(Paths.ffprobe, [
            "-v", "error", "-print_format", "json", "-select_streams", "v:0", "-show_frames",
            "-show_entries", "frame=key_frame,pict_type,best_effort_timestamp_time,pkt_dts_time,pkt_duration_time",
            url.path,
        ])
        guard result.succeeded else { throw ToolFailure(result) }
        return try decoder().decode(Frames.self, from: result.stdout).frames
    }

    /// Video duration measured from the frames themselves (last timestamp + its duration − first
    /// timestamp), so it works the same for MP4, Matroska (no stream duration) and MPEG-TS (offset start).
    static func measuredVideoDuration(_ url: URL) async throws -> Double {
        let times = try await videoFrames(url).compactMap(\.time).sorted()
        guard let first = times.first, let last = times.last else { throw ToolFailure("no video frames in \(url.path)") }
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }.sorted()
        let lastDuration = gaps.isEmpty ? 0 : gaps[gaps.count / 2]  // median gap stands in for the last frame's
        return last - first + lastDuration
    }
}

/// One decoded picture as packed RGB, 8 bits per channel.
struct RGBPicture: Sendable {
    var width: Int
    var height: Int
    var pixels: [UInt8]

    /// Decodes frame 0 of `url` with the ffmpeg CLI to a PPM and reads it. ffmpeg applies a display
    /// matrix (autorotate) unless `autorotate` is false. `filter` is an optional `-vf` graph applied
    /// after that (e.g. `hflip`) to build references.
    static func firstFrame(of url: URL, filter: String? = nil, autorotate: Bool = true) async throws -> RGBPicture {
        var arguments = autorotate ? [] : ["-noautorotate"]
        arguments += ["-i", url.path, "-frames:v", "1"]
        if let filter { arguments += ["-vf", filter] }
        arguments += ["-f", "image2pipe", "-c:v", "ppm", "-pix_fmt", "rgb24", "-"]
        return try parsePPM(try await ffmpeg(arguments).stdout)
    }

    /// Parses a binary PPM (`P6 W H 255` + rgb24 data).
    static func parsePPM(_ data: Data) throws -> RGBPicture {
        let bytes = [UInt8](data)
        var index = 0
        func token() throws -> String {
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\n")
                    || bytes[index] == UInt8(ascii: "\t") || bytes[index] == UInt8(ascii: "\r") { index += 1 }
            let start = index
            while index < bytes.count, !(bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\n")
                    || bytes[index] == UInt8(ascii: "\t") || bytes[index] == UInt8(ascii: "\r")) { index += 1 }
            guard start < index else { throw ToolFailure("truncated PPM header") }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }
        guard try token() == "P6", let width = Int(try token()), let height = Int(try token()),
              try token() == "255" else { throw ToolFailure("not an 8-bit P6 PPM") }
        index += 1  // the single whitespace byte after maxval
        let count = width * height * 3
        guard bytes.count - index >= count else { throw ToolFailure("PPM data too short") }
        return RGBPicture(width: width, height: height, pixels: Array(bytes[index..<(index + count)]))
    }

    enum Corner: String, CaseIterable, Sendable { case topLeft, topRight, bottomLeft, bottomRight }

    /// Mean colour of a `size`×`size` square inset by `inset` pixels from a corner.
    func meanColour(_ corner: Corner, size: Int = 40, inset: Int = 8) -> [Double] {
        let x0 = corner == .topLeft || corner == .bottomLeft ? inset : width - inset - size
        let y0 = corner == .topLeft || corner == .topRight ? inset : height - inset - size
        var sum = [0.0, 0.0, 0.0]
        for y in y0..<(y0 + size) {
            for x in x0..<(x0 + size) {
                let i = (y * width + x) * 3
                for c in 0..<3 { sum[c] += Double(pixels[i + c]) }
            }
        }
        return sum.map { $0 / Double(size * size) }
    }

    /// Whether the corner region is near-white: where the samples' orientation marker is.
    func isWhite(_ corner: Corner, tolerance: Double = 30) -> Bool {
        meanColour(corner).allSatisfy { $0 >= 255 - tolerance }
    }

    /// The corners holding the white marker.
    var whiteCorners: [Corner] { Corner.allCases.filter { isWhite($0) } }
}

/// Largest per-channel difference between two mean colours.
func colourDistance(_ a: [Double], _ b: [Double]) -> Double {
    zip(a, b).map { abs($0 - $1) }.max() ?? .infinity
}
