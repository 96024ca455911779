import Foundation

/// The subset of JSON Schema that docs/profile.schema.json and docs/api.schema.json use: type (one or
/// a list), required, properties, additionalProperties (false, or a schema for the other values),
/// items, maxItems, minimum, maximum, minLength, enum, pattern, and $ref to "#/definitions/NAME" or
/// to another file of docs/ ("profile.schema.json"). Returns one message per violation.
public func validate(_ value: Any, against schema: [String: Any], at path: String = "$",
                     references: [String: [String: Any]] = [:]) -> [String] {
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
    func sub(_ v: Any, _ s: [String: Any], _ p: String) -> [String] { validate(v, against: s, at: p, references: references) }
    if let types = schema["type"] {
        let allowed = (types as? [String]) ?? [types as! String]
        let actual = typeName(value)
        let ok = allowed.contains(actual) || (actual == "integer" && allowed.contains("number"))
        if !ok { return ["\(path): \(actual) is not \(allowed)"] }
    }
    if let reference = schema["$ref"] as? String, !(value is NSNull) {
        guard let target = references[reference] else { return ["\(path): unknown $ref \(reference)"] }
        problems += sub(value, target, path)
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
        if let others = schema["additionalProperties"] as? [String: Any] {
            for (key, v) in object where properties[key] == nil { problems += sub(v, others, "\(path).\(key)") }
        }
        for (key, s) in properties { if let v = object[key] { problems += sub(v, s, "\(path).\(key)") } }
    }
    if let array = value as? [Any] {
        if let max = schema["maxItems"] as? Int, array.count > max { problems.append("\(path): more than \(max) items") }
        if let items = schema["items"] as? [String: Any] {
            for (i, v) in array.enumerated() { problems += sub(v, items, "\(path)[\(i)]") }
        }
    }
    return problems
}

/// docs/api.schema.json's definitions, with docs/profile.schema.json for their references.
/// Immutable after `init`, so safe to share (its JSON values are Foundation's, typed Any).
public struct APISchema: @unchecked Sendable {
    private let definitions: [String: [String: Any]]
    private let references: [String: [String: Any]]

    public init() throws {
        func load(_ name: String) throws -> [String: Any] {
            let data = try Data(contentsOf: URL(fileURLWithPath: FixturePaths.fixturesDirectory + "/../docs/" + name))
            return try JSONSerialization.jsonObject(with: data) as! [String: Any]
        }
        let api = try load("api.schema.json")
        definitions = api["definitions"] as? [String: [String: Any]] ?? [:]
        var references = ["profile.schema.json": try load("profile.schema.json")]
        for (name, definition) in definitions { references["#/definitions/" + name] = definition }
        self.references = references
    }

    /// The problems of `json` (a JSON document) against definition `name`; one when it is not JSON.
    public func problems(of json: Data, as name: String) -> [String] {
        guard let definition = definitions[name] else { return ["no definition \(name) in docs/api.schema.json"] }
        guard let value = try? JSONSerialization.jsonObject(with: json, options: .fragmentsAllowed) else { return ["not JSON: \(String(decoding: json.prefix(200), as: UTF8.self))"] }
        return validate(value, against: definition, references: references)
    }
}
