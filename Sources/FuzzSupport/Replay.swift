// Shared by the fuzz targets: replaying saved inputs without libFuzzer, and libFuzzer's driver.
#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` once on the bytes of each file named (the replay mode of a fuzz target).
public func replay(_ paths: ArraySlice<String>, _ body: (UnsafeRawBufferPointer) -> Void) {
    var count = 0
    for path in paths {
        guard let file = fopen(path, "rb") else {
            print("cannot open \(path)")
            exit(2)
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        fclose(file)
        bytes.withUnsafeBytes(body)
        count += 1
    }
    print("replayed \(count) input(s) without a crash")
}

#if FUZZING
/// libFuzzer's own driver. SwiftPM links an executable's `main` to `<Module>_main` (our `@main`),
/// so libFuzzer's `main` is never used; `@main` calls this instead.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<Int32>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

public func runLibFuzzer(_ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32 {
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    return LLVMFuzzerRunDriver(&argc, &argv, callback)
}
#endif
