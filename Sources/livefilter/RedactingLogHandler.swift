import HLS
import Logging

/// Every log line through one redaction: the message and each metadata value with secrets hidden
/// and control characters escaped (`String.forLogs`), whatever module logged it.
struct RedactingLogHandler: LogHandler {
    private var inner: any LogHandler

    init(_ inner: any LogHandler) { self.inner = inner }

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = "\(event.message.description.forLogs)"
        var metadata = event.metadata.map(Self.redacted)
        // An error's text may name a URL too: it goes through the same redaction, as metadata.
        if let error = event.error {
            metadata = (metadata ?? [:]).merging(["error": .string(String(describing: error).forLogs)]) { $1 }
            event.error = nil
        }
        event.metadata = metadata
        inner.log(event: event)
    }

    static func redacted(_ metadata: Logger.Metadata) -> Logger.Metadata {
        metadata.mapValues(redacted)
    }

    static func redacted(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case let .string(text): .string(text.forLogs)
        case let .stringConvertible(item): .string(item.description.forLogs)
        case let .array(items): .array(items.map(redacted))
        case let .dictionary(entries): .dictionary(redacted(entries))
        }
    }
}
