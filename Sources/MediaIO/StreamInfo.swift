import CFFmpeg
import Filters

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
    public var duration: Double?
    public var bitRate: Int?
    public var frameCount: Int?
    public var colorSpace: ColorDescription

    /// The quarter-turn rotation autorotate applies (0, 90, 180 or 270), or nil for an odd angle.
    public var quarterTurnRotation: Int? {
        let r = (rotationClockwise.truncatingRemainder(dividingBy: 360) + 360).truncatingRemainder(dividingBy: 360)
        for q in [0, 90, 180, 270, 360] where abs(r - Double(q)) < 1 { return q % 360 }
        return nil
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
