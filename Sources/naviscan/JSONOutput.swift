import Foundation

/// `--json` output: one pretty, key-sorted JSON document on standard output, slashes as they are.
enum JSONOutput {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func write(_ value: some Encodable) throws {
        FileHandle.standardOutput.write(try encoder.encode(value) + Data("\n".utf8))
    }
}
