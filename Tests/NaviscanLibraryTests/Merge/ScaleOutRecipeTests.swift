import Foundation
import NaviscanLibrary
import NaviscanStore
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

    @Test("submit.sh: the array follows SHARDS, CPUs fit a small node, logs under SHARDS_DIR/logs, the merge runs afterany; a second run submits only incomplete shards")
    func slurmSubmit() throws {
        for script in ["dist/slurm/naviscan-scan.sbatch", "dist/slurm/naviscan-merge.sbatch", "dist/slurm/submit.sh"] {
            let check = try Self.run("/bin/bash", ["-n", Self.root + "/" + script])
            #expect(check.status == 0, "\(script): \(check.stderr)")
            // Nothing the node size or the shard count decides is fixed in the scripts.
            let text = try Self.text(script)
            #expect(!text.contains("#SBATCH --array") && !text.contains("#SBATCH --cpus-per-task"), "\(script)")
        }
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        // sbatch as the login node's: this one records its arguments and answers a job id.
        try FileManager.default.createDirectory(atPath: scratch + "/bin", withIntermediateDirectories: true)
        try """
            #!/bin/bash
            echo "$*" >> \(scratch)/sbatch.calls
            echo $((1000 + $(wc -l < \(scratch)/sbatch.calls)))
            """.write(toFile: scratch + "/bin/sbatch", atomically: true, encoding: .utf8)
        chmod(scratch + "/bin/sbatch", 0o755)
        try FileManager.default.createDirectory(atPath: scratch + "/music", withIntermediateDirectories: true)
        let environment = ["PATH": scratch + "/bin:/usr/bin:/bin", "LIBRARY": scratch + "/music", "SHARDS_DIR": scratch + "/shards",
                           "OUT": scratch + "/store", "SHARDS": "4", "NAVISCAN": NaviscanProcess.executable, "USER": ""]
        func submit(_ extra: [String: String] = [:]) throws -> (status: Int32, calls: [String], stderr: String) {
            try? FileManager.default.removeItem(atPath: scratch + "/sbatch.calls")
            let run = try Self.run("/bin/bash", [Self.root + "/dist/slurm/submit.sh"], environment: environment.merging(extra) { _, new in new })
            let calls = (try? String(contentsOfFile: scratch + "/sbatch.calls", encoding: .utf8))?.split(separator: "\n").map(String.init) ?? []
            return (run.status, calls, run.stderr)
        }
        let first = try submit()
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.calls.count == 2)
        let scan = first.calls.first ?? "", merge = first.calls.last ?? ""
        #expect(scan.contains("--array=0,1,2,3") && scan.contains("--cpus-per-task=2") && scan.contains("naviscan-scan.sbatch"), "\(scan)")
        #expect(scan.contains("--output=\(scratch)/shards/logs/scan-%A_%a.log") && scan.contains("SHARDS=4"), "\(scan)")
        #expect(merge.contains("--dependency=afterany:1001") && merge.contains("--output=\(scratch)/shards/logs/merge-%j.log"), "\(merge)")
        #expect(first.stderr.contains("squeue -u"), "USER unset still works: \(first.stderr)")

        // Shards 0, 1 and 3 completed: the same command re-submits shard 2 alone, then the merge.
        for k in [0, 1, 3] { FileManager.default.createFile(atPath: "\(scratch)/shards/shard-\(k).complete", contents: Data("\(k)/4 2026-01-01T00:00:00Z\n".utf8)) }
        let again = try submit()
        #expect(again.calls.first?.contains("--array=2 ") == true && again.calls.count == 2, "\(again.calls)")
        FileManager.default.createFile(atPath: "\(scratch)/shards/shard-2.complete", contents: Data("2/4 2026-01-01T00:00:00Z\n".utf8))
        let merged = try submit()
        #expect(merged.calls.count == 1 && merged.calls[0].contains("naviscan-merge.sbatch") && !merged.calls[0].contains("--dependency"), "\(merged.calls)")
        // Marks of a split into 4 are not complete shards of a split into 8.
        let eight = try submit(["SHARDS": "8"])
        #expect(eight.calls.first?.contains("--array=0,1,2,3,4,5,6,7 ") == true, "\(eight.calls)")
        let everything = try submit(["RESCAN": "1", "CPUS": "8"])
        #expect(everything.calls.first?.contains("--array=0,1,2,3 ") == true && everything.calls.first?.contains("--cpus-per-task=8") == true)

        // Checked before anything is submitted.
        let noBinary = try submit(["NAVISCAN": scratch + "/nowhere"])
        #expect(noBinary.status == 2 && noBinary.calls.isEmpty && noBinary.stderr.contains("NAVISCAN"), "\(noBinary.stderr)")
        let badShards = try submit(["SHARDS": "four"])
        #expect(badShards.status == 2 && badShards.calls.isEmpty && badShards.stderr.contains("SHARDS"))
        let comma = try submit(["OUT": scratch + "/a,b"])
        #expect(comma.status == 2 && comma.calls.isEmpty && comma.stderr.contains("comma"), "\(comma.stderr)")
        let noLibrary = try submit(["LIBRARY": scratch + "/missing"])
        #expect(noLibrary.status == 2 && noLibrary.calls.isEmpty && noLibrary.stderr.contains("not a folder"))
    }

    @Test("The Slurm scripts, run as array tasks and the merge job: a shard that fails holds the merge back by name; run again, the store is whole")
    func slurmScriptsRun() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try ShardMergeTests.makeLibrary(in: scratch, tracks: 4)
        let environment = ["SHARDS": "2", "LIBRARY": library.root, "SHARDS_DIR": scratch + "/shards", "OUT": scratch + "/store",
                           "NAVISCAN": NaviscanProcess.executable, "SLURM_CPUS_PER_TASK": "1"]
        try FileManager.default.createDirectory(atPath: scratch + "/shards", withIntermediateDirectories: true)
        func task(_ k: Int) throws -> Int32 {
            var env = environment
            env["SLURM_ARRAY_TASK_ID"] = "\(k)"
            return try Self.run("/bin/bash", [Self.root + "/dist/slurm/naviscan-scan.sbatch"], environment: env).status
        }
        // Shard 1's output folder cannot be made (a file is in its place): exit 2, not complete.
        FileManager.default.createFile(atPath: scratch + "/shards/shard-1", contents: Data("in the way".utf8))
        #expect(try task(0) == 0)
        #expect(try task(1) == 2)
        #expect((try? String(contentsOfFile: scratch + "/shards/shard-0.complete", encoding: .utf8))?.hasPrefix("0/2 ") == true)
        #expect(!FileManager.default.fileExists(atPath: scratch + "/shards/shard-1.complete"))
        let held = try Self.run("/bin/bash", [Self.root + "/dist/slurm/naviscan-merge.sbatch"], environment: environment)
        #expect(held.status == 1 && held.stderr.contains("shards 1 of 2 did not complete"), "\(held.stderr)")
        #expect(!FileManager.default.fileExists(atPath: OutputLayout(root: scratch + "/store").databasePath))

        try FileManager.default.removeItem(atPath: scratch + "/shards/shard-1")
        #expect(try task(1) == 0)
        let merge = try Self.run("/bin/bash", [Self.root + "/dist/slurm/naviscan-merge.sbatch"], environment: environment)
        #expect(merge.status == 0, "\(merge.stderr)")
        let rows = try LibraryStore(path: OutputLayout(root: scratch + "/store").databasePath).allTracks()
        #expect(rows.filter { $0.status == .ok }.count == library.good.count)
        #expect(try LibraryStore(path: OutputLayout(root: scratch + "/store").databasePath).shardCoverage() == nil)
    }

    /// dist/kubernetes/submit.sh's DRY_RUN=1 output (the templates filled in), as PyYAML parses it.
    static func kubernetesManifest(_ scratch: String, _ environment: [String: String]) throws -> [[String: Any]] {
        let rendered = try run("/bin/bash", [root + "/dist/kubernetes/submit.sh"],
                               environment: ["PATH": "/usr/bin:/bin", "DRY_RUN": "1"].merging(environment) { _, new in new })
        #expect(rendered.status == 0, "\(rendered.stderr)")
        try rendered.stdout.write(toFile: scratch + "/rendered.yaml", atomically: true, encoding: .utf8)
        let parsed = try run("/usr/bin/python3", ["-c", "import json, sys, yaml; print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d]))", scratch + "/rendered.yaml"])
        #expect(parsed.status == 0, "\(parsed.stderr)")
        return try JSONSerialization.jsonObject(with: Data(parsed.stdout.utf8)) as? [[String: Any]] ?? []
    }

    static func container(_ job: [String: Any], _ name: String) -> [String: Any] {
        let pod = podSpec(job)
        let all = (pod["initContainers"] as? [[String: Any]] ?? []) + (pod["containers"] as? [[String: Any]] ?? [])
        return all.first { $0["name"] as? String == name } ?? [:]
    }

    static func env(_ container: [String: Any]) -> [String: String] {
        var values: [String: String] = [:]
        for entry in container["env"] as? [[String: Any]] ?? [] { values[entry["name"] as? String ?? ""] = entry["value"] as? String }
        return values
    }

    @Test("The Kubernetes recipe: an Indexed Job over a read-only library reading JOB_COMPLETION_INDEX, a merge Job that waits for it through the API, the claims and the service account, all from submit.sh's variables")
    func kubernetesJobs() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let documents = try Self.kubernetesManifest(scratch, ["SHARDS": "4", "CPUS": "3", "RUN": "t1", "NAMESPACE": "music",
                                                              "LIBRARY_NFS": "nas:/export/music", "STORAGE_CLASS": "rwx", "IMAGE": "localhost/naviscan:9.9.9"])
        func document(_ kind: String, _ name: String) -> [String: Any]? {
            documents.first { $0["kind"] as? String == kind && ($0["metadata"] as? [String: Any])?["name"] as? String == name }
        }
        let scanJob = try #require(document("Job", "naviscan-scan-t1"))
        #expect(scanJob["apiVersion"] as? String == "batch/v1")
        let spec = try #require(scanJob["spec"] as? [String: Any])
        #expect(spec["completionMode"] as? String == "Indexed" && spec["completions"] as? Int == 4 && spec["parallelism"] as? Int == 4)
        #expect(spec["backoffLimitPerIndex"] as? Int ?? 0 >= 1 && spec["ttlSecondsAfterFinished"] as? Int ?? 0 > 0)
        let scan = Self.container(scanJob, "scan")
        let script = (scan["args"] as? [String])?.first ?? ""
        #expect(script.contains("naviscan scan") && script.contains("--shard \"auto/$SHARDS\"") && script.contains("$JOB_COMPLETION_INDEX"), "\(script)")
        #expect(Self.env(scan)["SHARDS"] == "4" && Self.env(scan)["JOBS"] == "3" && scan["image"] as? String == "localhost/naviscan:9.9.9")
        // The library is mounted read-only, from a claim opened read-only, bound to the NFS export's volume.
        let pod = Self.podSpec(scanJob)
        let library = try #require((scan["volumeMounts"] as? [[String: Any]])?.first { $0["mountPath"] as? String == Self.env(scan)["NAVISCAN_LIBRARY"] })
        #expect(library["readOnly"] as? Bool == true)
        let volume = (pod["volumes"] as? [[String: Any]])?.first { $0["name"] as? String == library["name"] as? String }
        let claim = try #require((volume?["persistentVolumeClaim"] as? [String: Any]))
        #expect(claim["readOnly"] as? Bool == true)
        let libraryClaim = try #require(document("PersistentVolumeClaim", claim["claimName"] as? String ?? "?"))
        #expect(((libraryClaim["spec"] as? [String: Any])?["accessModes"] as? [String]) == ["ReadOnlyMany"])
        let nfs = try #require(document("PersistentVolume", "naviscan-library-music"))
        #expect(((nfs["spec"] as? [String: Any])?["nfs"] as? [String: Any])?["path"] as? String == "/export/music")
        // Not root; nothing written outside /data and the pod's scratch folder.
        let security = pod["securityContext"] as? [String: Any] ?? [:]
        #expect(security["runAsUser"] as? Int == 990 && security["runAsNonRoot"] as? Bool == true)
        #expect((scan["securityContext"] as? [String: Any])?["readOnlyRootFilesystem"] as? Bool == true)

        let mergeJob = try #require(document("Job", "naviscan-merge-t1"))
        #expect(((mergeJob["spec"] as? [String: Any])?["ttlSecondsAfterFinished"] as? Int ?? 0) > 0)
        // It waits for the scan Job by itself, as a service account that may read Jobs.
        let wait = Self.container(mergeJob, "wait")
        #expect(Self.env(wait)["SCAN_JOB"] == "naviscan-scan-t1")
        let account = try #require(Self.podSpec(mergeJob)["serviceAccountName"] as? String)
        #expect(document("ServiceAccount", account) != nil && document("Role", account) != nil && document("RoleBinding", account) != nil)
        let merge = Self.container(mergeJob, "merge")
        let mergeScript = (merge["args"] as? [String])?.first ?? ""
        #expect(mergeScript.contains("naviscan merge") && Self.env(merge)["SHARDS"] == "4", "\(mergeScript)")
        // What the merge reads is where the scan pods wrote: the same claim, the same folder names.
        let data = { (job: [String: Any]) in
            ((Self.podSpec(job)["volumes"] as? [[String: Any]])?.first { $0["name"] as? String == "data" }?["persistentVolumeClaim"] as? [String: Any])?["claimName"] as? String
        }
        #expect(data(scanJob) == "naviscan-data" && data(mergeJob) == "naviscan-data" && document("PersistentVolumeClaim", "naviscan-data") != nil)
        #expect(script.contains("shards=$DATA/shards") && mergeScript.contains("shards=$DATA/shards") && mergeScript.contains("\"$shards/shard-$k\""))
        #expect(script.contains("mark=$shards/shard-$k.complete") && mergeScript.contains("\"$shards/shard-$k.complete\""))
    }

    @Test("The Kubernetes pods' scripts, run as shipped: a shard that fails is named by the merge, which merges the others; run again, a complete shard is skipped, the store is whole")
    func kubernetesScriptsRun() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let documents = try Self.kubernetesManifest(scratch, ["SHARDS": "2", "RUN": "t2", "LIBRARY_CLAIM": "music", "DATA_CLAIM": "data"])
        let jobs = documents.filter { $0["kind"] as? String == "Job" }
        let scanJob = try #require(jobs.first { (($0["metadata"] as? [String: Any])?["name"] as? String)?.hasPrefix("naviscan-scan") == true })
        let mergeJob = try #require(jobs.first { (($0["metadata"] as? [String: Any])?["name"] as? String)?.hasPrefix("naviscan-merge") == true })
        let scan = Self.container(scanJob, "scan"), merge = Self.container(mergeJob, "merge")
        let library = try ShardMergeTests.makeLibrary(in: scratch, tracks: 4)
        // The pods' environment, with the volumes as folders and naviscan on PATH.
        try FileManager.default.createDirectory(atPath: scratch + "/bin", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: scratch + "/data/shards", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: scratch + "/tmp", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: scratch + "/bin/naviscan", withDestinationPath: NaviscanProcess.executable)
        let paths = ["PATH": scratch + "/bin:/usr/bin:/bin", "DATA": scratch + "/data", "NAVISCAN_LIBRARY": library.root,
                     "TMPDIR": scratch + "/tmp", "HOME": scratch + "/tmp", "NAVISCAN_FFTW_WISDOM": ""]
        func pod(_ container: [String: Any], index: Int? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
            var environment = Self.env(container).merging(paths) { _, new in new }
            if let index { environment["JOB_COMPLETION_INDEX"] = "\(index)" }
            return try Self.run("/bin/bash", ["-c", (container["args"] as? [String])?.first ?? "exit 99"], environment: environment)
        }
        // Shard 1's output folder cannot be made (a file is in its place): exit 2, not complete.
        FileManager.default.createFile(atPath: scratch + "/data/shards/shard-1", contents: Data("in the way".utf8))
        #expect(try pod(scan, index: 0).status == 0)
        #expect(try pod(scan, index: 1).status == 2)
        #expect((try? String(contentsOfFile: scratch + "/data/shards/shard-0.complete", encoding: .utf8))?.hasPrefix("0/2 ") == true)
        #expect(!FileManager.default.fileExists(atPath: scratch + "/data/shards/shard-1.complete"))
        let held = try pod(merge)
        #expect(held.status == 1 && held.stderr.contains("shards 1 of 2 did not complete"), "\(held.stderr)")
        #expect(try LibraryStore(path: OutputLayout(root: scratch + "/data/store").databasePath).shardCoverage() != nil, "shard 0 is merged alone")

        try FileManager.default.removeItem(atPath: scratch + "/data/shards/shard-1")
        let skipped = try pod(scan, index: 0)
        #expect(skipped.status == 0 && skipped.stdout.contains("shard 0/2 is complete"), "\(skipped.stdout)")
        #expect(try pod(scan, index: 1).status == 0)
        let merged = try pod(merge)
        #expect(merged.status == 0, "\(merged.stderr)")
        let rows = try LibraryStore(path: OutputLayout(root: scratch + "/data/store").databasePath).allTracks()
        #expect(rows.filter { $0.status == .ok }.count == library.good.count)
        #expect(try LibraryStore(path: OutputLayout(root: scratch + "/data/store").databasePath).shardCoverage() == nil)
        let logs = (try? FileManager.default.contentsOfDirectory(atPath: scratch + "/data/shards/logs")) ?? []
        #expect(Set(logs) == ["scan-t2-0.log", "scan-t2-1.log", "merge-t2.log"], "\(logs)")
    }
}
