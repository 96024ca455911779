import Foundation

/// Checks on parsed JSON (JSONSerialization's objects) shared by the tests that walk every output.
public enum JSONNumbers {
    /// The paths (`$.a.b[3]`) of numbers that are not finite.
    public static func nonFinite(in value: Any, at path: String = "$") -> [String] {
        switch value {
        case let dictionary as [String: Any]: return dictionary.flatMap { nonFinite(in: $0.value, at: path + "." + $0.key) }
        case let array as [Any]: return array.enumerated().flatMap { nonFinite(in: $0.element, at: path + "[\($0.offset)]") }
        case let number as NSNumber: return number.doubleValue.isFinite ? [] : [path]
        default: return []
        }
    }
}
