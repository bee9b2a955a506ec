/// Quantisation range of 8-bit Y′CbCr: `limited` (“TV”, Y 16…235, C 16…240) or `full` (“PC”/JPEG, 0…255).
public enum YUVRange: String, CaseIterable, Sendable {
    case limited, full
}
