import Foundation

/// The subset of JSON Schema that docs/profile.schema.json uses: type (one or a list), required,
/// properties, additionalProperties: false, items, maxItems, minimum, maximum, minLength, enum, pattern.
/// Returns one message per violation.
func validate(_ value: Any, against schema: [String: Any], at path: String = "$") -> [String] {
    var problems: [String] = []
    func typeName(_ v: Any) -> String {
        if v is NSNull { return "null" }
        if let n = v as? NSNumber {
            let objCType = String(cString: n.objCType)
            if objCType == "c" || objCType == "B" { return "boolean" }   // how Foundation boxes JSON true/false
            return n.doubleValue.rounded() == n.doubleValue ? "integer" : "number"
        }
        if v is String { return "string" }
        if v is [Any] { return "array" }
        if v is [String: Any] { return "object" }
        return "unknown"
    }
    if let types = schema["type"] {
        let allowed = (types as? [String]) ?? [types as! String]
        let actual = typeName(value)
        let ok = allowed.contains(actual) || (actual == "integer" && allowed.contains("number"))
        if !ok { return ["\(path): \(actual) is not \(allowed)"] }
    }
    if let n = value as? NSNumber, !(value is NSNull), typeName(value) != "boolean" {
        if let min = schema["minimum"] as? Double, n.doubleValue < min { problems.append("\(path): \(n) < \(min)") }
        if let max = schema["maximum"] as? Double, n.doubleValue > max { problems.append("\(path): \(n) > \(max)") }
    }
    if let s = value as? String {
        if let min = schema["minLength"] as? Int, s.count < min { problems.append("\(path): shorter than \(min)") }
        if let pattern = schema["pattern"] as? String, s.range(of: pattern, options: .regularExpression) == nil {
            problems.append("\(path): '\(s)' does not match \(pattern)")
        }
    }
    if let options = schema["enum"] as? [Any], let s = value as? String, !options.contains(where: { ($0 as? String) == s }) {
        problems.append("\(path): '\(s)' not in \(options)")
    }
    if let object = value as? [String: Any] {
        for key in schema["required"] as? [String] ?? [] where object[key] == nil { problems.append("\(path): missing \(key)") }
        let properties = schema["properties"] as? [String: [String: Any]] ?? [:]
        if (schema["additionalProperties"] as? Bool) == false {
            for key in object.keys where properties[key] == nil { problems.append("\(path): unexpected \(key)") }
        }
        for (key, sub) in properties { if let v = object[key] { problems += validate(v, against: sub, at: "\(path).\(key)") } }
    }
    if let array = value as? [Any] {
        if let max = schema["maxItems"] as? Int, array.count > max { problems.append("\(path): more than \(max) items") }
        if let items = schema["items"] as? [String: Any] {
            for (i, v) in array.enumerated() { problems += validate(v, against: items, at: "\(path)[\(i)]") }
        }
    }
    return problems
}
