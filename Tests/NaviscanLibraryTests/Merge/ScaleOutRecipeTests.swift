import Foundation
import NaviscanLibrary
import NaviscanTestSupport
import Testing

/// The Slurm and Kubernetes recipes of dist/: syntax checked (`bash -n`, a real YAML parser), the
/// variables and commands that make them work, and the Slurm scripts run for real as array tasks.
@Suite("Scale-out recipes (dist/slurm, dist/kubernetes)", .serialized)
struct ScaleOutRecipeTests {
    static let root = URL(fileURLWithPath: FixturePaths.fixturesDirectory).deletingLastPathComponent().path

    static func run(_ program: String, _ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
        try NaviscanProcess.run(arguments, environment: environment, program: program)
    }

    static func text(_ path: String) throws -> String { try String(contentsOfFile: root + "/" + path, encoding: .utf8) }

    /// The YAML file's documents, parsed by PyYAML (python3-yaml) and handed over as JSON.
    static func yamlDocuments(_ path: String) throws -> [[String: Any]] {
        let parsed = try run("/usr/bin/python3", ["-c", "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))", root + "/" + path])
        #expect(parsed.status == 0, "\(path): \(parsed.stderr)")
        return try JSONSerialization.jsonObject(with: Data(parsed.stdout.utf8)) as? [[String: Any]] ?? []
    }

    /// The first group of `pattern`'s first match in `text`.
    static func capture(_ pattern: String, in text: String) throws -> String? {
        try Regex(pattern).firstMatch(in: text)?.output[1].substring.map(String.init)
    }

    static func podSpec(_ job: [String: Any]) -> [String: Any] {
        ((job["spec"] as? [String: Any])?["template"] as? [String: Any])?["spec"] as? [String: Any] ?? [:]
    }

    @Test("The Slurm scripts parse (bash -n), use the array index, and chain the merge on the array's success")
    func slurmScripts() throws {
        let scripts = ["dist/slurm/naviscan-scan.sbatch", "dist/slurm/naviscan-merge.sbatch", "dist/slurm/submit.sh"]
        for script in scripts {
            let check = try Self.run("/bin/bash", ["-n", Self.root + "/" + script])
            #expect(check.status == 0, "\(script): \(check.stderr)")
        }
        let scan = try Self.text(scripts[0]), merge = try Self.text(scripts[1]), submit = try Self.text(scripts[2])
        let array = try #require(try Self.capture(#"#SBATCH --array=0-(\d+)"#, in: scan))
        let shards = try #require(try Self.capture(#"SHARDS=\$\{SHARDS:-(\d+)\}"#, in: scan))
        #expect(Int(array)! + 1 == Int(shards)!, "--array=0-\(array) is not SHARDS=\(shards) shards")
        #expect(merge.contains("SHARDS=${SHARDS:-\(shards)}"))
        #expect(scan.contains(#"--shard "auto/$SHARDS""#) && scan.contains("$SLURM_ARRAY_TASK_ID"))
        #expect(merge.contains(#""$NAVISCAN" merge "$OUT""#))
        #expect(submit.contains("sbatch --parsable") && submit.contains("--dependency=afterok:"))
        #expect(submit.contains("naviscan-scan.sbatch") && submit.contains("naviscan-merge.sbatch"))
    }

    @Test("The Slurm scripts, run as two array tasks and the merge job, make a merged store of the library")
    func slurmScriptsRun() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try ShardMergeTests.makeLibrary(in: scratch, tracks: 4)
        let environment = ["SHARDS": "2", "LIBRARY": library.root, "SHARDS_DIR": scratch + "/shards", "OUT": scratch + "/store",
                           "NAVISCAN": NaviscanProcess.executable, "SLURM_CPUS_PER_TASK": "1"]
        for task in 0..<2 {
            var env = environment
            env["SLURM_ARRAY_TASK_ID"] = "\(task)"
            let scan = try Self.run("/bin/bash", [Self.root + "/dist/slurm/naviscan-scan.sbatch"], environment: env)
            #expect(scan.status == 0, "task \(task): \(scan.stderr)")
        }
        let merge = try Self.run("/bin/bash", [Self.root + "/dist/slurm/naviscan-merge.sbatch"], environment: environment)
        #expect(merge.status == 0, "\(merge.stderr)")
        let rows = try LibraryStore(path: scratch + "/store/naviscan.db").allTracks()
        #expect(rows.filter { $0.status == .ok }.count == library.good.count)
        #expect(try LibraryStore(path: scratch + "/store/naviscan.db").shardCoverage() == nil)
    }

    @Test("The Kubernetes recipe: an Indexed Job over a read-only library reading JOB_COMPLETION_INDEX, then the merge Job")
    func kubernetesJobs() throws {
        let scanJob = try #require(Self.yamlDocuments("dist/kubernetes/naviscan-scan.yaml").first)
        #expect(scanJob["kind"] as? String == "Job" && scanJob["apiVersion"] as? String == "batch/v1")
        let spec = try #require(scanJob["spec"] as? [String: Any])
        #expect(spec["completionMode"] as? String == "Indexed")
        let completions = try #require(spec["completions"] as? Int)
        #expect(spec["parallelism"] as? Int ?? 0 >= 1)
        let pod = Self.podSpec(scanJob)
        let container = try #require((pod["containers"] as? [[String: Any]])?.first)
        let command = ((container["command"] as? [String] ?? []) + (container["args"] as? [String] ?? [])).joined(separator: " ")
        #expect(command.contains("naviscan scan") && command.contains("--shard auto/\(completions)") && command.contains("$JOB_COMPLETION_INDEX"), "\(command)")
        // The library is mounted read-only, from a claim opened read-only.
        let mounts = container["volumeMounts"] as? [[String: Any]] ?? []
        let library = try #require(mounts.first { command.contains("scan " + ($0["mountPath"] as? String ?? "?") + " ") })
        #expect(library["readOnly"] as? Bool == true)
        let volume = (pod["volumes"] as? [[String: Any]])?.first { $0["name"] as? String == library["name"] as? String }
        #expect((volume?["persistentVolumeClaim"] as? [String: Any])?["readOnly"] as? Bool == true)

        let mergeJob = try #require(Self.yamlDocuments("dist/kubernetes/naviscan-merge.yaml").first)
        #expect(mergeJob["kind"] as? String == "Job")
        let merge = try #require((Self.podSpec(mergeJob)["containers"] as? [[String: Any]])?.first)
        let mergeCommand = ((merge["command"] as? [String] ?? []) + (merge["args"] as? [String] ?? [])).joined(separator: " ")
        #expect(mergeCommand.contains("naviscan merge") && mergeCommand.contains("seq 0 \(completions - 1)"), "\(mergeCommand)")
        // What the merge reads is where the scan pods wrote: the same claim, the same folder names.
        let shardFolder = try #require(try Self.capture(#"--out "([^"$]+)\$JOB_COMPLETION_INDEX""#, in: command))
        #expect(mergeCommand.contains("\"\(shardFolder)$k\""), "\(mergeCommand)")
    }
}
