import Logging

/// Wraps a log handler so that every message and metadata value reaches it with control characters
/// escaped: a file named `a\n2026-01-01 … error …` (names may hold any byte but `/` and NUL) or a
/// request header cannot write a forged line into the log. One log call stays one line.
public struct EscapingLogHandler: LogHandler {
    private var base: any LogHandler

    public init(_ base: any LogHandler) { self.base = base }

    public var logLevel: Logger.Level {
        get { base.logLevel }
        set { base.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { base.metadata }
        set { base.metadata = newValue.mapValues(Self.escaped) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { base[metadataKey: key] }
        set { base[metadataKey: key] = newValue.map(Self.escaped) }
    }

    public func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?,
                    source: String, file: String, function: String, line: UInt) {
        base.log(level: level, message: "\(Self.escaped(message.description))", metadata: metadata?.mapValues(Self.escaped),
                 source: source, file: file, function: function, line: line)
    }

    /// C0 and C1 control characters, DEL and the Unicode line and paragraph separators as `\n`,
    /// `\r`, `\t` or `\u{XX}`; a backslash stays a backslash (only what could break a line matters).
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else { out.append(scalar); continue }
            switch scalar {
            case "\n": out.append(contentsOf: "\\n".unicodeScalars)
            case "\r": out.append(contentsOf: "\\r".unicodeScalars)
            case "\t": out.append(contentsOf: "\\t".unicodeScalars)
            default: out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            }
        }
        return String(out)
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }

    private static func escaped(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): return .string(escaped(text))
        case .stringConvertible(let value): return .string(escaped(value.description))
        case .array(let values): return .array(values.map(escaped))
        case .dictionary(let values): return .dictionary(values.mapValues(escaped))
        }
    }
}
