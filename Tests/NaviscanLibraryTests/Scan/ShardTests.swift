import NaviscanLibrary
import NaviscanStore
import Testing

@Suite("Shards: the documented split of a library")
struct ShardTests {
    @Test("The shard is ⌊FNV-1a64(path) × N / 2⁶⁴⌋, as docs/scale-out.md computes it in Python")
    func documentedHash() {
        // Computed apart from naviscan with the docs' Python lines (hash, then (h * N) >> 64).
        let truth: [(String, [Int: Int])] = [
            ("Artist A/Album 1/01 First Song.flac", [2: 0, 3: 0, 4: 0, 7: 0, 1000: 91]),
            ("Ártist Ø/Ålbum 2 (Live)/track 3.ogg", [2: 1, 3: 1, 4: 2, 7: 4, 1000: 597]),
            ("a", [2: 1, 3: 2, 4: 2, 7: 4, 1000: 685]),
            ("曲.mp3", [2: 0, 3: 0, 4: 1, 7: 2, 1000: 332]),
        ]
        for (path, shards) in truth {
            for (count, index) in shards {
                #expect(Shard.index(ofRelativePath: path, count: count) == index, "\(path) in \(count)")
                #expect(Shard(index: index, count: count).contains(relativePath: path))
            }
        }
        #expect(OutputLayout.key(forRelativePath: "a") == "af63dc4c8601ec8c")
    }

    @Test("Every track lands in exactly one shard, and the shards are of similar size")
    func partition() {
        let paths = (0..<4000).map { "Artist \($0 % 37)/Album \($0 % 11)/\($0) track.flac" }
        for count in [1, 2, 4, 16] {
            let shards = (0..<count).map { Shard(index: $0, count: count) }
            var sizes = [Int](repeating: 0, count: count)
            for path in paths {
                let holders = shards.filter { $0.contains(relativePath: path) }
                #expect(holders.count == 1, "\(path) is in \(holders.count) of \(count) shards")
                if let holder = holders.first { sizes[holder.index] += 1 }
            }
            let mean = paths.count / count
            #expect(sizes.allSatisfy { abs($0 - mean) < mean / 5 + 20 }, "\(count) shards: \(sizes)")
        }
    }

    @Test("K/N and auto/N parse; out-of-range values and a missing variable are refused in words")
    func parsing() throws {
        #expect(try Shard(parsing: "2/4", environment: [:]) == Shard(index: 2, count: 4))
        #expect(try Shard(parsing: "auto/4", environment: ["SLURM_ARRAY_TASK_ID": "3"]) == Shard(index: 3, count: 4))
        #expect(try Shard(parsing: "auto/4", environment: ["JOB_COMPLETION_INDEX": "1"]) == Shard(index: 1, count: 4))
        #expect(throws: ShardError.indexOutOfRange(index: 4, count: 4, from: nil)) { try Shard(parsing: "4/4", environment: [:]) }
        #expect(throws: ShardError.indexOutOfRange(index: 4, count: 4, from: "SLURM_ARRAY_TASK_ID")) {
            try Shard(parsing: "auto/4", environment: ["SLURM_ARRAY_TASK_ID": "4"])
        }
        #expect(throws: ShardError.noIndexVariable(count: 4)) { try Shard(parsing: "auto/4", environment: ["HOME": "/root"]) }
        #expect(throws: ShardError.indexVariableNotNumber(variable: "JOB_COMPLETION_INDEX", value: "x")) {
            try Shard(parsing: "auto/2", environment: ["JOB_COMPLETION_INDEX": "x"])
        }
        for bad in ["4", "1/0", "-1/4", "a/b", "1/4/2", ""] {
            #expect(throws: ShardError.self) { try Shard(parsing: bad, environment: [:]) }
        }
        let message = ShardError.noIndexVariable(count: 8).description
        #expect(message.contains("SLURM_ARRAY_TASK_ID") && message.contains("JOB_COMPLETION_INDEX") && message.contains("K/8"))
    }

    @Test("A store's recorded shards read back as written")
    func recordedSets() {
        var set = ShardSet(Shard(index: 2, count: 4))
        #expect(set.description == "2/4" && !set.isComplete)
        set.indices.formUnion([0, 1, 3])
        #expect(set.description == "0,1,2,3/4" && set.isComplete)
        #expect(ShardSet(recorded: "3,0/4")?.indices == [0, 3])
        #expect(ShardSet(recorded: "4/4") == nil && ShardSet(recorded: "x") == nil)
    }
}
