/// The Y′CbCr matrix of a video signal (ITU-R BT.601, BT.709 and BT.2020 non-constant luminance).
public enum YUVMatrix: String, CaseIterable, Sendable {
    case bt601, bt709, bt2020

    /// Luma weights of red and blue (green is 1 − Kr − Kb).
    public var kr: Double {
        switch self {
        case .bt601: 0.299
        case .bt709: 0.2126
        case .bt2020: 0.2627
        }
    }

    public var kb: Double {
        switch self {
        case .bt601: 0.114
        case .bt709: 0.0722
        case .bt2020: 0.0593
        }
    }
}
