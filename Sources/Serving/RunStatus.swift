import CoreMetrics
import Foundation
import Hummingbird
import NIOConcurrencyHelpers
import Prometheus

/// The process's metrics backend, installed once by the application: every value the library
/// records through swift-metrics goes both to a Prometheus registry (`GET /metrics`, text format)
/// and to a table of latest values (`GET /status`, `livefilter.status/1` JSON), so the two always
/// agree.
public final class RunStatus: Sendable {
    public let registry = PrometheusCollectorRegistry()
    let table = LatestValues()
    private let started = Date()

    public init() {}

    /// Installs this as swift-metrics' backend (once per process, before the job is made).
    public func bootstrap() {
        var prometheus = PrometheusMetricsFactory(registry: registry)
        // Latency in seconds, from a fast live run (1 s) to one far behind (2 min).
        prometheus.defaultDurationHistogramBuckets = [0.25, 0.5, 1, 2, 3, 4, 6, 8, 12, 20, 30, 60, 120].map { .milliseconds(Int($0 * 1000)) }
        MetricsSystem.bootstrap(MultiplexMetricsHandler(factories: [prometheus, table]))
    }

    /// Prometheus text exposition format 0.0.4.
    public func prometheusText() -> String {
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `livefilter.status/1`: the headline numbers, then every metric by name and labels.
    public func statusJSON() -> [UInt8] {
        // JSON has no NaN or infinity; a metric that is not a number yet is left out.
        let values = table.snapshot().filter { $0.value.isFinite }
        func value(_ name: String, _ labels: String = "") -> Double? { values[name + labels] }
        func int(_ name: String) -> Int { Int(value(name) ?? 0) }
        func byLabel(_ name: String, key: String) -> [String: Double] {
            var out: [String: Double] = [:]
            let prefix = name + "{" + key + "=\""
            for (k, v) in values where k.hasPrefix(prefix) {
                out[String(k.dropFirst(prefix.count).dropLast(2))] = (v * 1000).rounded() / 1000
            }
            return out
        }
        var object: [String: Any] = [
            "format": "livefilter.status/1",
            "phase": value("livefilter_finished") == 1 ? "finished" : "running",
            "uptimeSeconds": (Date().timeIntervalSince(started) * 1000).rounded() / 1000,
            "framesIn": int("livefilter_frames_in_total"),
            "framesOut": int("livefilter_frames_out_total"),
            "ticks": ["shown": int("livefilter_ticks_total"), "repeated": int("livefilter_ticks_repeated_total"),
                      "dropped": int("livefilter_ticks_dropped_total")],
            "inputStalls": int("livefilter_input_stalls_total"),
            "inputReconnects": int("livefilter_input_reconnects_total"),
            // A channel (--on-input-loss hold|slate): whether its input is lost now, and its losses.
            "inputLost": value("livefilter_input_lost") == 1,
            "inputLosses": int("livefilter_input_losses_total"),
            "inputLossSeconds": ((value("livefilter_input_loss_seconds_total") ?? 0) * 1000).rounded() / 1000,
            // --overload adapt: the level now (0: nothing shed) and what was shed so far.
            "overload": ["level": int("livefilter_overload_level"), "changes": int("livefilter_overload_changes_total"),
                         "picturesNotDecoded": int("livefilter_pictures_not_decoded_total"),
                         "ticksShed": int("livefilter_ticks_shed_total"),
                         "encoderPresetChanges": int("livefilter_encoder_preset_changes_total")],
            // Closed captions (A/53 cc_data): bytes the source's pictures carried and the output's got.
            "captions": ["bytesIn": int("livefilter_caption_bytes_in_total"), "bytesOut": int("livefilter_caption_bytes_out_total"),
                         "tripletsDropped": int("livefilter_caption_triplets_dropped_total")],
            "bytesWritten": int("livefilter_bytes_written_total"),
            "segmentsWritten": int("livefilter_segments_written_total"),
            "stagesMsPerFrame": byLabel("livefilter_stage_ms_per_frame", key: "stage"),
            "filtersMsPerFrame": byLabel("livefilter_filter_ms_per_frame", key: "filter"),
            "metrics": values,
        ]
        object["latencySeconds"] = value("livefilter_latency_seconds") ?? NSNull()
        object["speed"] = value("livefilter_speed") ?? NSNull()
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8))
    }

    /// `/metrics` and `/status`, or nil for any other path.
    public func respond(to request: Request) -> Response? {
        let cors: HTTPFields = [.accessControlAllowOrigin: "*", .cacheControl: "no-cache"]
        guard ["/metrics", "/status", "/status/ready", "/status/live"].contains(request.uri.path) else { return nil }
        guard request.method == .get || request.method == .head else {
            return Response(status: .methodNotAllowed, headers: [.allow: "GET, HEAD"])
        }
        switch request.uri.path {
        case "/metrics":
            var headers = cors
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers,
                            body: request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(string: prometheusText())))
        case "/status":
            var headers = cors
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers,
                            body: request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: statusJSON())))
        case "/status/ready":
            // Readiness (a load balancer, Kubernetes): the output exists and grows. A channel
            // holding its last picture or a slate is ready: viewers get a picture.
            let ready = isReady
            return Response(status: ready ? .ok : .serviceUnavailable, headers: cors,
                            body: ResponseBody(byteBuffer: ByteBuffer(string: ready ? "ready\n" : "no output yet\n")))
        case "/status/live":
            // Liveness: the clock ticks. Fails only when a run that has ticked stops ticking (a
            // wedged pipeline: restart it), not while a channel waits for its first publisher.
            let alive = isAlive
            return Response(status: alive ? .ok : .serviceUnavailable, headers: cors,
                            body: ResponseBody(byteBuffer: ByteBuffer(string: alive ? "alive\n" : "the clock has not ticked for \(Int(Self.stuckAfter)) s\n")))
        default:
            return nil
        }
    }

    /// Seconds without a tick after which a running run is wedged.
    static let stuckAfter = 30.0
    private let tickWatch = NIOLockedValueBox<(ticks: Double, changed: Date)>((0, Date()))

    var isReady: Bool {
        let values = table.snapshot()
        return values["livefilter_finished"] != 1 && (values["livefilter_frames_out_total"] ?? 0) > 0
    }

    var isAlive: Bool {
        let values = table.snapshot()
        if values["livefilter_finished"] == 1 { return true }
        let ticks = values["livefilter_ticks_total"] ?? 0
        return tickWatch.withLockedValue { watch in
            if ticks != watch.ticks { watch = (ticks, Date()) }
            return ticks == 0 || Date().timeIntervalSince(watch.changed) < Self.stuckAfter
        }
    }
}

/// A swift-metrics backend that keeps the latest value of each metric (counters summed), keyed
/// `name{label="value",…}` as Prometheus writes it.
final class LatestValues: MetricsFactory, Sendable {
    private let values = NIOLockedValueBox<[String: Double]>([:])

    func snapshot() -> [String: Double] { values.withLockedValue { $0 } }

    static func key(_ label: String, _ dimensions: [(String, String)]) -> String {
        guard !dimensions.isEmpty else { return label }
        return label + "{" + dimensions.map { "\($0.0)=\"\($0.1)\"" }.joined(separator: ",") + "}"
    }

    final class Handler: CounterHandler, FloatingPointCounterHandler, RecorderHandler, TimerHandler, MeterHandler, Sendable {
        let key: String
        let values: NIOLockedValueBox<[String: Double]>
        init(key: String, values: NIOLockedValueBox<[String: Double]>) {
            self.key = key
            self.values = values
            values.withLockedValue { if $0[key] == nil { $0[key] = 0 } }
        }
        private func add(_ v: Double) { values.withLockedValue { $0[key, default: 0] += v } }
        private func store(_ v: Double) { values.withLockedValue { $0[key] = v } }
        func increment(by amount: Int64) { add(Double(amount)) }
        func increment(by amount: Double) { add(amount) }
        func decrement(by amount: Double) { add(-amount) }
        func reset() { store(0) }
        func record(_ value: Int64) { store(Double(value)) }
        func record(_ value: Double) { store(value) }
        func recordNanoseconds(_ duration: Int64) { store(Double(duration) / 1e9) }
        func set(_ value: Int64) { store(Double(value)) }
        func set(_ value: Double) { store(value) }
    }

    private func handler(_ label: String, _ dimensions: [(String, String)]) -> Handler {
        Handler(key: Self.key(label, dimensions), values: values)
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { handler(label, dimensions) }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler { handler(label, dimensions) }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler { handler(label, dimensions) }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { handler(label, dimensions) }
    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler { handler(label, dimensions) }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
    func destroyMeter(_ handler: any MeterHandler) {}
}
