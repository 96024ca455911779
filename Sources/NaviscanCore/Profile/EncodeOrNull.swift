extension KeyedEncodingContainer {
    // A value or an explicit null. Encoding an Optional directly goes through the encoder's generic
    // path (a dynamic cast per field), which took more than half of a profile's encoding time.
    mutating func encodeOrNull(_ value: Double?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }

    mutating func encodeOrNull(_ value: Int?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }

    mutating func encodeOrNull(_ value: Bool?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }

    mutating func encodeOrNull(_ value: String?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }

    mutating func encodeOrNull<Value: Encodable>(_ value: Value?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
}
