#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// printf-style formatting of short strings through the C library's `vsnprintf`: the same output
/// as Foundation's `String(format:)`, without its CoreFoundation string machinery, which cost more
/// than the rest of a short track's profile.
public enum CFormat {
    /// `format` with `arguments`, at most 127 bytes of output (longer is cut).
    public static func string(_ format: String, _ arguments: CVarArg...) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 128) { buffer in
            let written = withVaList(arguments) { vsnprintf(buffer.baseAddress!, 128, format, $0) }
            guard written > 0 else { return "" }
            return String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress!, count: min(Int(written), 127)), as: UTF8.self)
        }
    }
}
