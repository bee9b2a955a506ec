import Foundation

/// Test hooks for the reliability and overload tests (RELIABILITY.md, docs/operations.md), read
/// from the environment once, where a configuration is made: the plan hands each stage its value,
/// so no stage looks at the environment.
public struct FaultInjection: Sendable, Equatable {
    /// `LIVEFILTER_FAULT_ENCODER_AFTER=N`: the encoder "fails" after N frames, as libx264 would on
    /// an internal error, so the failure path is exercised for real.
    public var encoderFailsAfter: Int?
    /// `LIVEFILTER_FAULT_SLOW_PICTURE_MS=N`: the filter stage spends N ms more on each new picture
    /// (a machine too slow for the stream, for the overload tests).
    public var slowPictureMilliseconds: UInt32?
    /// `LIVEFILTER_PIN_OVERLOAD_LEVEL=N`: the overload level held at N for the whole run (what each
    /// level saves, measured), the controller deciding nothing.
    public var pinnedOverloadLevel: Int?

    public init(encoderFailsAfter: Int? = nil, slowPictureMilliseconds: UInt32? = nil, pinnedOverloadLevel: Int? = nil) {
        (self.encoderFailsAfter, self.slowPictureMilliseconds, self.pinnedOverloadLevel)
            = (encoderFailsAfter, slowPictureMilliseconds, pinnedOverloadLevel)
    }

    /// The hooks the process's environment sets.
    public init(environment: [String: String]) {
        self.init(encoderFailsAfter: environment["LIVEFILTER_FAULT_ENCODER_AFTER"].flatMap { Int($0) },
                  slowPictureMilliseconds: environment["LIVEFILTER_FAULT_SLOW_PICTURE_MS"].flatMap { UInt32($0) },
                  pinnedOverloadLevel: environment["LIVEFILTER_PIN_OVERLOAD_LEVEL"].flatMap { Int($0) })
    }
}
