import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where the references of an input's playlists may lead. The input the operator names is always
/// read; what *it* references is checked here, on every URI (variants, renditions, segments, parts,
/// hints, keys, maps) and on every redirect, so a hostile origin cannot make livefilter read local
/// files or reach services only this machine can (server-side request forgery: a cloud metadata
/// service at 169.254.169.254, an admin port on loopback).
public struct NetworkAccess: Sendable, Equatable {
    /// Local files (`file:` or a path). Only a playlist read from a local file may reference them.
    public var localFiles: Bool
    /// Loopback, link-local, private and other non-public addresses (`AddressScope.isPublic`).
    public var privateNetworks: Bool

    public init(localFiles: Bool, privateNetworks: Bool) {
        (self.localFiles, self.privateNetworks) = (localFiles, privateNetworks)
    }

    /// The rule for an input: a local playlist may reference anything; a remote one only the network,
    /// and private addresses only when the input is itself on one (or `allowPrivateNetworks` says so).
    public static func forInput(_ input: URL, allowPrivateNetworks: Bool?) async -> NetworkAccess {
        guard let scheme = input.scheme?.lowercased(), scheme != "file" else {
            return NetworkAccess(localFiles: true, privateNetworks: allowPrivateNetworks ?? true)
        }
        if let allowPrivateNetworks { return NetworkAccess(localFiles: false, privateNetworks: allowPrivateNetworks) }
        let addresses = await HostAddresses.resolve(input.host ?? "")
        // An input on a private network (or one that does not resolve here) is a private deployment.
        let isPrivate = addresses.isEmpty || addresses.contains { !$0.isPublic }
        return NetworkAccess(localFiles: false, privateNetworks: isPrivate)
    }
}

/// An IP address and whether the public internet can route to it (IANA special-purpose registries,
/// RFC 6890): what `--allow-private-networks` keeps a remote playlist from.
public struct IPAddress: Sendable, Equatable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6).
    public let bytes: [UInt8]

    public init?(_ text: some StringProtocol) {
        var host = String(text)
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if let zone = host.firstIndex(of: "%") { host = String(host[..<zone]) }
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else if inet_pton(AF_INET6, host, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
        } else {
            return nil
        }
    }

    init(bytes: [UInt8]) { self.bytes = bytes }

    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var copy = bytes
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        guard inet_ntop(family, &copy, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Routable on the public internet: not loopback, unspecified, link-local, private (RFC 1918, ULA),
    /// shared (CGNAT), multicast, broadcast, documentation or benchmarking space; an IPv4-mapped or
    /// NAT64 IPv6 address is judged by the IPv4 address it carries.
    public var isPublic: Bool {
        let b = bytes
        if b.count == 4 {
            switch (b[0], b[1]) {
            case (0, _), (10, _), (127, _), (169, 254), (192, 168), (255, _): return false
            case (172, 16...31), (100, 64...127), (198, 18...19): return false  // private, shared (CGNAT), benchmarking
            case (192, 0) where b[2] == 0 || b[2] == 2: return false  // IETF assignments, TEST-NET-1
            case (198, 51) where b[2] == 100, (203, 0) where b[2] == 113: return false  // TEST-NET-2, -3
            case (224...239, _), (240...254, _): return false  // multicast, reserved
            default: return true
            }
        }
        guard b.count == 16 else { return false }
        let embeddedV4 = Array(b[12...])
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF { return IPAddress(bytes: embeddedV4).isPublic }  // ::ffff:a.b.c.d
        if b[0..<12] == [0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0][...] { return IPAddress(bytes: embeddedV4).isPublic }  // 64:ff9b::/96
        if b[0..<15].allSatisfy({ $0 == 0 }) { return false }  // :: and ::1
        if b[0..<12].allSatisfy({ $0 == 0 }) { return false }  // IPv4-compatible (deprecated)
        if b[0] & 0xFE == 0xFC { return false }  // fc00::/7 unique local
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return false }  // fe80::/10 link-local
        if b[0] == 0xFE && b[1] & 0xC0 == 0xC0 { return false }  // fec0::/10 site-local (deprecated)
        if b[0] == 0xFF { return false }  // multicast
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0D && b[3] == 0xB8 { return false }  // 2001:db8::/32 documentation
        return true
    }
}

/// A host's addresses, resolved with the system resolver off the cooperative pool.
enum HostAddresses {
    static func resolve(_ host: String) async -> [IPAddress] {
        if let literal = IPAddress(host) { return [literal] }
        guard !host.isEmpty else { return [] }
        return await withCheckedContinuation { (continuation: CheckedContinuation<[IPAddress], Never>) in
            // getaddrinfo blocks; a thread of its own keeps it off the pool's few threads.
            let thread = Thread { continuation.resume(returning: lookup(host)) }
            thread.stackSize = 256 << 10
            thread.start()
        }
    }

    private static func lookup(_ host: String) -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var found: [IPAddress] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let entry = node {
            if let address = entry.pointee.ai_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET:
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                        var a = $0.pointee.sin_addr
                        found.append(IPAddress(bytes: withUnsafeBytes(of: &a) { Array($0) }))
                    }
                case AF_INET6:
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                        var a = $0.pointee.sin6_addr
                        found.append(IPAddress(bytes: withUnsafeBytes(of: &a) { Array($0) }))
                    }
                default: break
                }
            }
            node = entry.pointee.ai_next
        }
        return found
    }
}
