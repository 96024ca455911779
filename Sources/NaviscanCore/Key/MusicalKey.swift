/// A major or minor key, and the spellings DJ software reads: note names as ID3's TKEY defines them
/// ("Am", "F#", "Ebm": at most three characters), Camelot ("8A") and Open Key ("1m").
public struct MusicalKey: Sendable, Hashable, Codable {
    public enum Mode: String, Sendable, Codable, CaseIterable { case major, minor }

    /// Pitch class of the tonic, 0 = C … 11 = B.
    public var tonic: Int
    public var mode: Mode

    public init(tonic: Int, mode: Mode) {
        self.tonic = ((tonic % 12) + 12) % 12
        self.mode = mode
    }

    /// The 24 keys: C major … B major, then C minor … B minor.
    public static let all: [MusicalKey] = Mode.allCases.flatMap { mode in (0..<12).map { MusicalKey(tonic: $0, mode: mode) } }

    /// The spellings Mixxx writes (and Traktor, rekordbox and Serato read): flats except F# and, in
    /// minor, C#m, F#m and G#m.
    static let majorNames = ["C", "Db", "D", "Eb", "E", "F", "F#", "G", "Ab", "A", "Bb", "B"]
    static let minorTonics = ["C", "C#", "D", "Eb", "E", "F", "F#", "G", "G#", "A", "Bb", "B"]

    /// The tonic's name: "A", "F#", "Eb".
    public var tonicName: String { mode == .major ? Self.majorNames[tonic] : Self.minorTonics[tonic] }

    /// The tag spelling: "C", "F#", "Am", "Ebm".
    public var name: String { mode == .major ? tonicName : tonicName + "m" }

    /// "A minor", "F# major".
    public var words: String { "\(tonicName) \(mode.rawValue)" }

    /// Camelot wheel position, 1…12.
    public var camelotNumber: Int {
        let n = (7 * tonic + (mode == .major ? 8 : 5)) % 12
        return n == 0 ? 12 : n
    }

    /// "8A" (A minor), "8B" (C major).
    public var camelot: String { "\(camelotNumber)\(mode == .minor ? "A" : "B")" }

    /// "1m" (A minor), "1d" (C major): Open Key is Camelot turned by five.
    public var openKey: String {
        let n = (camelotNumber + 4) % 12 + 1
        return "\(n)\(mode == .minor ? "m" : "d")"
    }

    /// The key in `notation`: "Am", "8A" or "1m".
    public func spelled(_ notation: KeyNotation) -> String {
        switch notation {
        case .standard: name
        case .camelot: camelot
        case .openKey: openKey
        }
    }

    /// Reads a spelling this type writes (note name, Camelot or Open Key); nil otherwise.
    public init?(_ text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let last = trimmed.last, "ABdm".contains(last), let number = Int(trimmed.dropLast()), (1...12).contains(number) {
            let isOpenKey = last == "d" || last == "m"
            let camelot = isOpenKey ? (number + 6) % 12 + 1 : number
            let minor = last == "A" || last == "m"
            guard let key = Self.all.first(where: { $0.mode == (minor ? .minor : .major) && $0.camelotNumber == camelot }) else { return nil }
            self = key
            return
        }
        let minor = trimmed.hasSuffix("m")
        // "am" as "Am": the note's letter in either case, then its sign.
        let tonic = (minor ? String(trimmed.dropLast()) : trimmed).prefix(1).uppercased() + (minor ? String(trimmed.dropLast()) : trimmed).dropFirst()
        let sharps = ["C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B"]
        let flats = ["C", "Db", "D", "Eb", "E", "F", "Gb", "G", "Ab", "A", "Bb", "B"]
        guard let pc = sharps.firstIndex(of: tonic) ?? flats.firstIndex(of: tonic) else { return nil }
        self.init(tonic: pc, mode: minor ? .minor : .major)
    }

    /// How far apart two keys are on the Camelot wheel, in steps: 0 the same key, 1 a fifth either
    /// way or the relative key, more for the others (a fifth and a mode change counts 2).
    public func camelotDistance(to other: MusicalKey) -> Int {
        let d = abs(camelotNumber - other.camelotNumber)
        let around = min(d, 12 - d)
        return around + (mode == other.mode ? 0 : 1)
    }

    /// The keys a DJ mixes into from this one without a clash: itself, a fifth either way, the relative key.
    public func isHarmonicNeighbour(of other: MusicalKey) -> Bool { camelotDistance(to: other) <= 1 }
}

import Foundation

/// How a key is written into tags: note names as ID3's TKEY defines them (what Mixxx, Traktor,
/// rekordbox and Serato read), Camelot or Open Key.
public enum KeyNotation: String, Sendable, CaseIterable {
    case standard
    case camelot
    case openKey = "open-key"
}
