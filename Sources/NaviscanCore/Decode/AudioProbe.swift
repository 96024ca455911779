/// A file's length from its headers, without decoding it: exact where the container states it,
/// estimated otherwise. For progress and ETA only; nil when the file cannot be opened.
public enum AudioProbe {
    public static func duration(path: String) -> Double? {
        guard let decoder = try? AudioDecoderFactory.open(path: path) else { return nil }
        return decoder.info.estimatedDuration
    }
}
