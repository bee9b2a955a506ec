import FuzzSupport
import Filters
#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer target for the chain grammar: any text either parses or throws a `ChainSyntaxError`
/// (never traps), and a chain that parses prints a `description` that parses again to the same text.
///
/// Built with `-Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING` (see scripts/fuzz.sh), `main` hands over to
/// libFuzzer's driver. In an ordinary build this is a replay tool: `FuzzChainGrammar FILE…` runs each file once,
/// so a crash found by the fuzzer can be reproduced without libFuzzer.
func fuzzChainGrammar(_ bytes: UnsafeRawBufferPointer) {
    let text = String(decoding: bytes, as: UTF8.self)
    for parse in [{ try FilterChain(parsing: text) }, { try FilterChain(parsingFile: text) }] as [() throws -> FilterChain] {
        guard let chain = try? parse() else { continue }
        let printed = chain.description
        guard let again = try? FilterChain(parsing: printed) else {
            fatalError("description does not re-parse: \(printed.debugDescription) from \(text.debugDescription)")
        }
        guard again.description == printed else {
            fatalError("round trip changed the chain: \(printed.debugDescription) -> \(again.description.debugDescription)")
        }
        // Geometry is pure and must not trap for any size either.
        _ = try? chain.outputSize(for: FrameSize(width: 640, height: 360))
        _ = try? chain.outputSize(for: FrameSize(width: 1, height: 1))
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func LLVMFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzChainGrammar(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
    return 0
}

@main
struct ReplayChainGrammar {
    static func main() {
        #if FUZZING
        exit(runLibFuzzer(LLVMFuzzerTestOneInput))
        #else
        replay(CommandLine.arguments.dropFirst(), fuzzChainGrammar)
        #endif
    }
}
