import Foundation
import HLS

/// How an input is opened.
public struct InputOptions: Sendable {
    /// Abort a network read that makes no progress for this long.
    public var ioTimeout: Duration = .seconds(10)
    /// Protocols a playlist may reference when the input itself came over the network.
    public var networkProtocols = "http,https,tls,tcp,crypto"
    /// Which variant of an HLS master playlist to read.
    public var variant: VariantChoice = .highest
    /// Where a live HLS input starts.
    public var liveStart: LiveStart = .edge
    /// HTTP redirects followed before giving up.
    public var maxRedirects = 5
    /// Largest picture accepted (width × height); larger headers are refused before decoding.
    public var maxPixels = 8192 * 4320
    /// An `rtmp://` input is a server a publisher pushes to (`--listen`), as `ffmpeg -listen 1`.
    public var listen = false
    /// A listener off loopback takes publishers with no stream key or passphrase (`--listen-unauthenticated`).
    public var listenUnauthenticated = false
    /// Whether a remote HLS playlist's references may reach loopback, link-local and private
    /// addresses; nil: yes only when the input is itself on such an address (`--allow-private-networks`).
    public var allowPrivateNetworks: Bool?
    /// Where the input's warnings go: give each run its own (nil: the input makes one, `Demuxer.warnings`).
    /// A caller that reports warnings while the input opens (a listener's refused publishers) sets it.
    public var warnings: InputWarningLog?
    /// Dimensions of the input's metrics (`livefilter_input_…`), the run's (`RunMetrics`).
    public var metricDimensions: [(String, String)] = []
    public init() {}
}
