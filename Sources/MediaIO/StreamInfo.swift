import CFFmpeg
import struct Filters.FrameSize

/// Facts about a video stream, copied out of FFmpeg so no pointer is borrowed.
public struct VideoStreamInfo: Sendable {
    public var index: Int
    public var codecName: String
    public var size: FrameSize
    public var pixelFormat: PixelFormat
    public var timeBase: Rational
    /// The nominal frame rate (avg_frame_rate, else r_frame_rate), if the container states one.
    public var frameRate: Rational?
    /// Display-matrix rotation to apply, in degrees clockwise (0 when none), as ffmpeg's autorotate reads it.
    public var rotationClockwise: Double
    /// The display matrix itself (rotation and mirroring), when the container has one.
    public var displayMatrix: DisplayMatrix?
    public var duration: Double?
    public var bitRate: Int?
    public var frameCount: Int?
    public var colorSpace: ColorDescription

    /// Facts stated by hand (tests, planning without an input); a stream's come from the demuxer.
    public init(index: Int = 0, codecName: String = "h264", size: FrameSize, pixelFormat: PixelFormat = .yuv420p,
                timeBase: Rational = Rational(1, 90000), frameRate: Rational? = Rational(30, 1),
                displayMatrix: DisplayMatrix? = nil, duration: Double? = nil, bitRate: Int? = nil, frameCount: Int? = nil,
                colorSpace: ColorDescription = .bt709) {
        self.index = index
        self.codecName = codecName
        self.size = size
        self.pixelFormat = pixelFormat
        self.timeBase = timeBase
        self.frameRate = frameRate
        self.displayMatrix = displayMatrix
        rotationClockwise = displayMatrix?.rotationClockwise ?? 0
        self.duration = duration
        self.bitRate = bitRate
        self.frameCount = frameCount
        self.colorSpace = colorSpace
    }
}

/// Facts about an audio stream.
public struct AudioStreamInfo: Sendable {
    public var index: Int
    public var codecName: String
    public var isAAC: Bool
    public var sampleRate: Int
    public var channels: Int
    public var bitRate: Int?
    public var timeBase: Rational

    public init(index: Int, codecName: String, isAAC: Bool, sampleRate: Int, channels: Int, bitRate: Int?, timeBase: Rational) {
        self.index = index
        self.codecName = codecName
        self.isAAC = isAAC
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitRate = bitRate
        self.timeBase = timeBase
    }
}

extension VideoStreamInfo {
    init(stream: UnsafeMutablePointer<AVStream>) {
        let par = stream.pointee.codecpar.pointee
        index = Int(stream.pointee.index)
        codecName = String(cString: avcodec_get_name(par.codec_id))
        size = FrameSize(width: Int(par.width), height: Int(par.height))
        pixelFormat = PixelFormat(AVPixelFormat(rawValue: par.format))
        timeBase = Rational(stream.pointee.time_base)
        let avg = stream.pointee.avg_frame_rate, real = stream.pointee.r_frame_rate
        if avg.num > 0 && avg.den > 0 {
            frameRate = Rational(avg)
        } else if real.num > 0 && real.den > 0 {
            frameRate = Rational(real)
        } else {
            frameRate = nil
        }
        // av_display_rotation_get is counter-clockwise; ffmpeg's autorotate turns by its negation.
        let ccw = lf_stream_rotation(stream)
        rotationClockwise = ccw == 0 ? 0 : -ccw
        var matrix = [Int32](repeating: 0, count: 9)
        displayMatrix = lf_stream_display_matrix(stream, &matrix) != 0 ? DisplayMatrix(matrix) : nil
        let d = stream.pointee.duration
        duration = d > 0 && d != lf_nopts_value() ? Double(d) * timeBase.doubleValue : nil
        bitRate = par.bit_rate > 0 ? Int(par.bit_rate) : nil
        frameCount = stream.pointee.nb_frames > 0 ? Int(stream.pointee.nb_frames) : nil
        colorSpace = ColorDescription(par)
    }
}

extension AudioStreamInfo {
    init(stream: UnsafeMutablePointer<AVStream>) {
        let par = stream.pointee.codecpar.pointee
        index = Int(stream.pointee.index)
        codecName = String(cString: avcodec_get_name(par.codec_id))
        isAAC = par.codec_id == AV_CODEC_ID_AAC
        sampleRate = Int(par.sample_rate)
        channels = Int(par.ch_layout.nb_channels)
        bitRate = par.bit_rate > 0 ? Int(par.bit_rate) : nil
        timeBase = Rational(stream.pointee.time_base)
    }
}
