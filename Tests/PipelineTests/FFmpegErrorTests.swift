import MediaIO
import Testing

/// The failures livefilter raises itself read exactly as FFmpeg's codes for them do
/// (the fault tests and RELIABILITY.md quote these lines).
struct FFmpegErrorTests {
    @Test(arguments: [
        (FFmpegError.Kind.inputOutput, "encoding (libx264) [injected fault after 40 frames]",
         "encoding (libx264) [injected fault after 40 frames] failed: Input/output error (-5)"),
        (.operationNotPermitted, "something odd", "something odd failed: Operation not permitted (-1)"),
    ])
    func kindsReadAsFFmpegCodes(kind: FFmpegError.Kind, operation: String, expected: String) {
        #expect(FFmpegError(kind, operation: operation).description == expected)
    }
}
