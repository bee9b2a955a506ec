import Dispatch
import Foundation
import FuzzSupport
import HLS
import HLSClient
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer target for the HLS reader (not only the parser): each input is what a loopback
/// origin answers (`Script`: the first playlist, its reloads and variants, segment, part, key and
/// map bodies, statuses, redirects, slow, held, trickled and cut answers). The reader opens
/// http://127.0.0.1:PORT/index.m3u8, starts, and its feed is read as the demuxer reads it for at
/// most `drainLimit`, then the reader is stopped. What must hold for every input:
/// - `HLSReader.open` returns (a reader or an `HLSInputError`) within `openLimit`;
/// - the feed ends — end of stream, failed, or cancelled by our stop, never cancelled by itself;
/// - an AES-128 segment or map carries a 16-byte key and IV (what MediaIO's decryptor takes);
/// - once stopped and let go, the reader is freed within `releaseLimit`: its tasks have ended.
/// A trap anywhere (the sanitizer's too) is a crash.
///
/// Built with `-Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING` (scripts/fuzz.sh), `main` hands
/// over to libFuzzer's driver. In an ordinary build this is a replay tool: `FuzzHLSReader [--verbose] FILE…`
/// runs each file once; `--verbose` (or FUZZ_VERBOSE=1, for the libFuzzer build too) prints how each
/// ended and what the origin was asked.
let drainLimit: Duration = .milliseconds(120)
let openLimit: DispatchTimeInterval = .seconds(5)
let releaseLimit: Duration = .seconds(2)
let verbose = CommandLine.arguments.contains("--verbose") || ProcessInfo.processInfo.environment["FUZZ_VERBOSE"] == "1"

func fuzzReader(_ bytes: UnsafeRawBufferPointer) {
    let origin = LoopbackOrigin.shared
    let script = Script(bytes, port: origin.port)
    origin.load(script)
    let lateBefore = origin.late
    var report = ReaderReport()
    let started = ContinuousClock.now

    var options = HLSReaderOptions()
    // Small enough that a failing segment's retries, a held answer's timeout and a whole VOD run fit
    // in an input's few hundred milliseconds; the limits' logic is the same at any size.
    options.ioTimeout = .milliseconds(100)
    options.maxRedirects = 3
    options.feedCapacity = 4096
    options.allowPrivateNetworks = script.choices.allowPrivateNetworks
    options.variant = script.choices.lowest ? .lowest : .highest
    options.liveStart = LiveStart(rawValue: script.choices.liveStart) ?? .edge
    let warnings = Shared<[String]>([])
    options.warn = { line in warnings.withLock { if $0.count < 16 { $0.append(line) } } }

    // libFuzzer calls from its own thread, not one of the pool's: it may wait on the pool's work.
    let opened = Shared<Result<HLSReader, HLSInputError>?>(nil)
    let done = DispatchSemaphore(value: 0)
    let url = "http://127.0.0.1:\(origin.port)/index.m3u8"
    Task {
        let result: Result<HLSReader, HLSInputError>
        do throws(HLSInputError) { result = .success(try await HLSReader.open(url, options: options)) } catch { result = .failure(error) }
        opened.withLock { $0 = result }
        done.signal()
    }
    if done.wait(timeout: .now() + openLimit) == .timedOut {
        fatalError("HLSReader.open did not return within \(openLimit) (--io-timeout is 100 ms)")
    }
    var reader: HLSReader?
    switch opened.withLock({ $0! }) {
    case let .failure(error): report.opened = "refused to open: \(error)"
    case let .success(r): reader = r; report.opened = "opened (\(r.info.isLive ? "live" : "VOD"), variant \(r.info.variantIndex.map(String.init) ?? "-") of \(r.info.variantCount))"
    }
    opened.withLock { $0 = nil }

    if let r = reader {
        r.start(at: script.choices.seek)
        let stopRequested = Shared(false)
        let stopper = DispatchWorkItem { [weak r] in
            stopRequested.withLock { $0 = true }
            r?.stop()
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(drainLimit / .milliseconds(1))), execute: stopper)
        // The demuxer's side: blocking reads until the feed ends.
        read: while true {
            switch r.feed.next() {
            case let .item(item): report.count(item)
            case let .end(how):
                let byUs = stopRequested.withLock { $0 }
                switch how {
                case .endOfStream: report.ended = "end of stream"
                case let .failed(error): report.ended = "failed: \(error)"
                case .cancelled:
                    if !byUs { fatalError("the feed ended as cancelled, but nobody stopped the reader") }
                    report.ended = "cancelled by our stop"
                }
                break read
            }
        }
        stopper.cancel()
        report.endedAfter = ContinuousClock.now - started
        r.stop()
    }

    // Let the reader go: its tasks hold it, so it is freed when they have all ended.
    weak let gone = reader
    reader = nil
    let released = ContinuousClock.now
    // Polled: nothing tells us of another type's deinit. A millisecond's sleep on libFuzzer's thread.
    while gone != nil {
        if ContinuousClock.now - released > releaseLimit {
            fatalError("the reader was still alive \(releaseLimit) after stop(): one of its tasks did not end")
        }
        usleep(1000)
    }
    report.releasedAfter = ContinuousClock.now - released
    let (log, late) = origin.close()
    if verbose {
        report.requests = log
        report.warnings = warnings.withLock { $0 }
        report.lateRequests = late - lateBefore
        // On stderr, in order with libFuzzer's own lines ("Running: FILE").
        FileHandle.standardError.write(Data((report.description + "\n").utf8))
    }
}

/// A value shared with a task or another thread (a `Mutex` cannot be captured: it is not copyable).
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}

/// What one input did, for `--verbose`.
struct ReaderReport: CustomStringConvertible {
    var opened = ""
    var ended = "-"
    var endedAfter: Duration?
    var releasedAfter: Duration = .zero
    var segments = 0, bytes = 0, completeEnds = 0, brokenEnds = 0, partEnds = 0
    var bytesBeforeAnySegment = 0
    var encrypted = 0, maps = 0, restarts = 0
    var timelines: Set<Int> = []
    var requests: [String] = []
    var warnings: [String] = []
    var lateRequests = 0

    mutating func count(_ item: ByteFeed.Item) {
        switch item {
        case let .segment(header):
            segments += 1
            timelines.insert(header.discontinuitySequence)
            if header.restart { restarts += 1 }
            if let aes = header.aes128 { encrypted += 1; check(aes) }
            if let map = header.initialization {
                maps += 1
                if let aes = map.aes128 { check(aes) }
            }
        case let .bytes(b):
            if segments == 0 { bytesBeforeAnySegment += b.count }
            bytes += b.count
        case let .segmentEnd(complete):
            if complete { completeEnds += 1 } else { brokenEnds += 1 }
        case .partEnd:
            partEnds += 1
        }
    }

    private func check(_ aes: AESParameters) {
        if aes.key.count != 16 || aes.iv.count != 16 {
            fatalError("an AES-128 segment with a \(aes.key.count)-byte key and a \(aes.iv.count)-byte IV")
        }
    }

    var description: String {
        let ms = { (d: Duration) in "\(d / .milliseconds(1) > 0 ? Int(d / .milliseconds(1)) : 0) ms" }
        var lines = ["  \(opened)"]
        if let endedAfter {
            lines.append("  feed: \(ended) after \(ms(endedAfter)); \(segments) segment header(s) (\(restarts) restart, "
                         + "\(encrypted) AES-128, \(maps) with a map, timelines \(timelines.sorted())), \(bytes) bytes, "
                         + "\(completeEnds) complete + \(brokenEnds) broken segment end(s), \(partEnds) part end(s)"
                         + (bytesBeforeAnySegment > 0 ? "; \(bytesBeforeAnySegment) bytes before any segment header" : ""))
        }
        lines.append("  reader freed \(ms(releasedAfter)) after stop; requests: \(requests.joined(separator: " "))")
        if lateRequests > 0 { lines.append("  \(lateRequests) request(s) came after the reader was freed") }
        lines += warnings.map { "  warning: \($0.prefix(200))" }
        return lines.joined(separator: "\n")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func LLVMFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzReader(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
    return 0
}

@main
struct ReplayHLSReader {
    static func main() {
        #if FUZZING
        exit(runLibFuzzer(LLVMFuzzerTestOneInput))
        #else
        let paths = CommandLine.arguments.dropFirst().filter { $0 != "--verbose" }
        guard verbose else { return replay(paths[...], fuzzReader) }
        for path in paths {
            FileHandle.standardError.write(Data("Running: \(path)\n".utf8))
            replay([path], fuzzReader)
        }
        #endif
    }
}
