import CFFmpeg
import Foundation
import HLS

/// Reads a small text resource (a playlist) from a path, a `file:` URL or an http/https URL through
/// FFmpeg's avio, so network behaviour (TLS, proxies, redirects) matches what the demuxer will see.
/// - Parameters:
///   - timeout: abort when a read makes no progress for this long (avio's `rw_timeout`).
///   - maxBytes: refuse anything longer (a playlist is kilobytes; a video file is not a playlist).
public func fetchText(_ url: String, timeout: Duration, maxBytes: Int) throws(MediaError) -> String {
    let isNetwork = url.contains("://") && !url.hasPrefix("file:")
    if isNetwork, !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
        throw .inputUnreadable(url, reason: "only http and https URLs are supported")
    }
    if !isNetwork {
        let path = url.hasPrefix("file:") ? String(url.dropFirst(5)) : url
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { throw .inputNotFound(url) }
        if isDirectory.boolValue { throw .inputUnreadable(url, reason: "it is a directory") }
    }

    var dict: OpaquePointer? = nil
    defer { av_dict_free(&dict) }
    let micros = timeout.components.seconds * 1_000_000 + timeout.components.attoseconds / 1_000_000_000_000
    av_dict_set(&dict, "rw_timeout", String(max(1, micros)), 0)
    av_dict_set(&dict, "timeout", String(max(1, micros)), 0)  // tcp connect timeout
    av_dict_set(&dict, "protocol_whitelist", isNetwork ? "http,https,tls,tcp" : "file", 0)

    var io: UnsafeMutablePointer<AVIOContext>? = nil
    let openCode = avio_open2(&io, url, AVIO_FLAG_READ, nil, &dict)
    guard openCode >= 0, let io else {
        if openCode == lf_averror(ENOENT) || openCode == lf_averror_http_not_found() { throw .inputNotFound(url) }
        throw .inputUnreadable(url, reason: ffmpegErrorText(openCode))
    }
    defer { var c: UnsafeMutablePointer<AVIOContext>? = io; avio_closep(&c) }

    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16 * 1024)
    while true {
        let n = chunk.withUnsafeMutableBufferPointer { avio_read(io, $0.baseAddress, Int32($0.count)) }
        if n == lf_averror_eof() || n == 0 { break }
        if n < 0 { throw .inputUnreadable(url, reason: ffmpegErrorText(n)) }
        bytes.append(contentsOf: chunk[0..<Int(n)])
        if bytes.count > maxBytes { throw .inputUnreadable(url, reason: "it is larger than \(maxBytes) bytes; not a playlist") }
    }
    guard let text = String(validating: bytes, as: UTF8.self) else {
        throw .inputUnreadable(url, reason: "it is not UTF-8 text")
    }
    return text
}
