import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

/// The key model as shipped: one generated file of named weights, its Python twin's numbers, and
/// the spellings every reader of a key expects.
@Suite("Key model and spellings")
struct KeyModelTests {
    struct Parity: Decodable {
        struct Track: Decodable {
            var id: String
            var values: [[Double]]
            var clarity: Double
            var probabilities: [Double]
        }
        var names: [String]
        var weights: [String: Double]
        var minimumClarity: Double
        var tracks: [Track]
        enum CodingKeys: String, CodingKey { case names, weights, minimumClarity = "minimum_clarity", tracks }
    }

    @Test("the Swift model gives the probabilities scripts/key-model computed on the same dumps, with the shipped weights")
    func parityWithTwin() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: FixturePaths.fixture("key/parity.json")))
        let parity = try JSONDecoder().decode(Parity.self, from: data)
        // The fixture and the generated file come from one fit: the same names, weights and floor.
        #expect(parity.names == KeyFeatures.names)
        #expect(parity.weights == KeyModel.shipped.weights)
        #expect(parity.minimumClarity == KeyModel.shipped.minimumClarity)
        #expect(parity.tracks.count >= 3)
        for track in parity.tracks {
            let p = KeyModel.shipped.probabilities(KeyFeatures(values: track.values, clarity: track.clarity))
            let worst = zip(p, track.probabilities).map { abs($0 - $1) }.max() ?? 1
            #expect(worst < 1e-9, "\(track.id): differs by \(worst)")
        }
    }

    @Test("every feature has a weight, by name")
    func weightsNamed() {
        #expect(Set(KeyModel.shipped.weights.keys) == Set(KeyFeatures.names))
        #expect(KeyFeatures.names.count == Set(KeyFeatures.names).count)
    }

    @Test("Camelot, Open Key and tag spellings of all 24 keys, and reading them back")
    func spellings() throws {
        let a = MusicalKey(tonic: 9, mode: .minor), c = MusicalKey(tonic: 0, mode: .major)
        #expect(a.name == "Am" && a.camelot == "8A" && a.openKey == "1m")
        #expect(c.name == "C" && c.camelot == "8B" && c.openKey == "1d")
        #expect(MusicalKey(tonic: 8, mode: .minor).camelot == "1A" && MusicalKey(tonic: 8, mode: .minor).name == "G#m")
        #expect(MusicalKey(tonic: 6, mode: .major).camelot == "2B" && MusicalKey(tonic: 6, mode: .major).name == "F#")
        #expect(MusicalKey(tonic: 3, mode: .minor).name == "Ebm" && MusicalKey(tonic: 4, mode: .major).camelot == "12B")
        #expect(Set(MusicalKey.all.map(\.camelot)).count == 24 && Set(MusicalKey.all.map(\.openKey)).count == 24)
        for key in MusicalKey.all {
            #expect(key.name.count <= 3, "ID3 TKEY holds at most 3 characters: \(key.name)")
            for notation in KeyNotation.allCases { #expect(MusicalKey(key.spelled(notation)) == key, "\(key.spelled(notation))") }
        }
        #expect(MusicalKey("D#m") == MusicalKey(tonic: 3, mode: .minor) && MusicalKey("Gb") == MusicalKey(tonic: 6, mode: .major))
        #expect(MusicalKey("am") == MusicalKey(tonic: 9, mode: .minor) && MusicalKey("Gbm") == MusicalKey(tonic: 6, mode: .minor))
        #expect(MusicalKey("13A") == nil && MusicalKey("H") == nil && MusicalKey("") == nil)
    }

    @Test("Camelot neighbours: the same key, a fifth either way, the relative key")
    func neighbours() {
        let a = MusicalKey(tonic: 9, mode: .minor)
        let neighbours = MusicalKey.all.filter { $0.isHarmonicNeighbour(of: a) }.map(\.camelot).sorted()
        #expect(neighbours == ["7A", "8A", "8B", "9A"])
        #expect(MusicalKey("12A")!.isHarmonicNeighbour(of: MusicalKey("1A")!))
    }
}
