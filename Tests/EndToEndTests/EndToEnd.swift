import Foundation
import Testing

/// End-to-end tests: run the built `livefilter` binary on `samples/` and check the results with
/// ffprobe/ffmpeg. Serialized: each run is an encode, and the machine has two cores — parallel
/// encodes would only make the timing-sensitive SIGINT test flaky. The tests live in extensions of
/// this suite, one file per area.
@Suite(.serialized)
struct EndToEnd {}
