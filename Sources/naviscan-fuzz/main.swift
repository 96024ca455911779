import Foundation

// naviscan-fuzz: the readers of untrusted files (format sniffer, every decoder backend, both frame
// file readers, the stored-profile reader) under mutated input. See scripts/ci/fuzz/README.md.
//
//   naviscan-fuzz --write-seeds DIR            small valid files of every kind (for the corpus script)
//   naviscan-fuzz --list                       the targets: id, name, kind (for the corpus script)
//   naviscan-fuzz CORPUS [--seed N] [--iterations N] [--seconds S] [--artifacts DIR]
//                                              the deterministic mutation driver
//   built with -sanitize=fuzzer -DNAVISCAN_LIBFUZZER: libFuzzer's own options (CORPUS -max_total_time=…)

let scratch = ProcessInfo.processInfo.environment["TMPDIR"] ?? (FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : "/tmp")
let runner = FuzzRunner(scratchDirectory: scratch)
let arguments = CommandLine.arguments

if let i = arguments.firstIndex(of: "--write-seeds"), i + 1 < arguments.count {
    do { try SeedWriter.write(to: arguments[i + 1]) } catch {
        FileHandle.standardError.write(Data("naviscan-fuzz: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}

if arguments.contains("--list") {
    for target in FuzzTargets.all { print(target.id, target.name, target.kind.rawValue) }
    exit(0)
}

#if NAVISCAN_LIBFUZZER
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

let libFuzzerRunner = runner
var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
    libFuzzerRunner.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
})
#else
func value(_ flag: String) -> String? {
    guard let i = arguments.firstIndex(of: flag), i + 1 < arguments.count else { return nil }
    return arguments[i + 1]
}
guard arguments.count > 1, !arguments[1].hasPrefix("-") else {
    FileHandle.standardError.write(Data("usage: naviscan-fuzz CORPUS [--seed N] [--iterations N] [--seconds S] [--artifacts DIR] | --list\n".utf8))
    exit(2)
}
let corpusDirectory = arguments[1]
let names = ((try? FileManager.default.contentsOfDirectory(atPath: corpusDirectory)) ?? []).sorted()
let corpus = names.compactMap { FileManager.default.contents(atPath: corpusDirectory + "/" + $0).map { [UInt8]($0) } }.filter { !$0.isEmpty }
guard !corpus.isEmpty else {
    FileHandle.standardError.write(Data("naviscan-fuzz: \(corpusDirectory): no corpus files; run scripts/ci/fuzz/make-corpus.sh first\n".utf8))
    exit(2)
}
let artifacts = value("--artifacts") ?? "."
try? FileManager.default.createDirectory(atPath: artifacts, withIntermediateDirectories: true)
let seconds = value("--seconds").flatMap(Double.init)
let driver = MutationDriver(corpus: corpus, seed: value("--seed").flatMap(UInt64.init) ?? 1, artifacts: artifacts, runner: runner)
let started = Date()
let counts = driver.run(iterations: value("--iterations").flatMap(Int.init) ?? .max, deadline: seconds.map { started.addingTimeInterval($0) })
let total = counts.values.reduce(0, +)
print("naviscan-fuzz: \(total) inputs in \(String(format: "%.0f", Date().timeIntervalSince(started))) s, no crash, no hang")
for (name, count) in counts.sorted(by: { $0.key < $1.key }) { print("  \(name): \(count)") }
#endif
