import Foundation
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanStore

/// One reader the fuzzer drives. `id` is the first byte of every input meant for it (the rest is
/// the file's content), so a corpus keeps meaning the same target when targets are added.
struct FuzzTarget: Sendable {
    enum Kind: String, Sendable { case audio, vis, profile }
    let id: UInt8
    let name: String
    /// Which seeds the corpus script gives it.
    let kind: Kind
    /// Reads the file at the path to the end; may throw, must never trap, hang or touch memory it
    /// does not own.
    let run: @Sendable (String) throws -> Void
}

enum FuzzTargets {
    /// Adding a decoder backend or a reader is one line here (a new id; never reuse one).
    static let all: [FuzzTarget] = [
        FuzzTarget(id: 1, name: "sniff", kind: .audio) { _ = try FormatSniffer.sniff(path: $0) },
        FuzzTarget(id: 2, name: "decode-auto", kind: .audio) { try drain(AudioDecoderFactory.open(path: $0)) },
        FuzzTarget(id: 3, name: "decode-mpg123", kind: .audio) { try drain(Mpg123Decoder(path: $0)) },
        FuzzTarget(id: 4, name: "decode-sndfile", kind: .audio) { try drain(SndFileDecoder(path: $0)) },
        FuzzTarget(id: 5, name: "vis-mapped", kind: .vis) { try readAll(VisFrameBuffer(path: $0)) },
        FuzzTarget(id: 6, name: "vis-chunked", kind: .vis) { try readAll(VisFrameFile(path: $0, chunkBytes: 4096)) },
        FuzzTarget(id: 7, name: "profile-json", kind: .profile) { _ = try StoredProfile.read(Data(contentsOf: URL(fileURLWithPath: $0))) },
        FuzzTarget(id: 8, name: "track-pipeline", kind: .audio) { try TrackPipeline.shared.run($0) },
    ]

    static func target(for input: UnsafeRawBufferPointer) -> FuzzTarget? {
        guard let first = input.first else { return nil }
        return all.first { $0.id == first }
    }

    /// Decodes to the end, and checks what the decoder promised: samples within the documented range.
    static func drain(_ decoder: AudioDecoder) throws {
        let info = decoder.info
        guard info.channels > 0, info.channels <= 64 else { return }
        let frames = 4096
        let block = UnsafeMutablePointer<Float>.allocate(capacity: frames * info.channels)
        defer { block.deallocate() }
        var total = 0
        while total < 50_000_000 {
            let n = try decoder.read(into: block, maxFrames: frames)
            if n == 0 { break }
            precondition(n <= frames, "decoder returned \(n) frames for a block of \(frames)")
            total += n
        }
    }

    static func readAll(_ buffer: VisFrameBuffer) throws {
        var frame = [Float](repeating: 0, count: buffer.bandCount)
        for i in 0..<buffer.frameCount {
            buffer.copyFrame(at: i, into: &frame)
            precondition(frame.allSatisfy { $0 >= 0 && $0 <= 1 }, "a validated file served a value outside [0, 1]")
        }
        _ = buffer.frameIndex(at: .greatestFiniteMagnitude)
    }

    static func readAll(_ file: VisFrameFile) throws {
        try file.validatePayload()
        var index = 0
        while index < file.frameCount {
            index += try file.readFrames(from: index) { values in
                precondition(values.allSatisfy { $0 >= 0 && $0 <= 1 }, "a validated file served a value outside [0, 1]")
            }
        }
    }
}

/// The whole path a library file takes: sniff, open, decode, every analyser, every writer (frames,
/// profile, waveform), the commit to a real SQLite store, and the readers the server answers from
/// (the chunked frame reader, the stored-profile reader, the waveform reader). A file that fails
/// must fail as a recorded failure; one that passes must read back as valid.
final class TrackPipeline {
    /// The fuzzer runs its inputs one at a time on one thread.
    nonisolated(unsafe) static let shared = TrackPipeline()
    private let root: String
    private let processor: TrackProcessor
    private let store: LibraryStore
    private var count = 0

    private init() {
        let scratch = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        root = scratch + "/naviscan-fuzz-\(getpid())-store"
        try? FileManager.default.removeItem(atPath: root)
        let layout = OutputLayout(root: root)
        try! FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        processor = TrackProcessor(layout: layout, visualizer: VisualizerConfig(), profile: ProfileConfig(),
                                   durability: .deferred, profileFileWriter: .processor, logger: Logger(label: "fuzz"))
        store = try! LibraryStore(path: layout.databasePath)
    }

    func run(_ path: String) throws {
        count += 1
        var st = stat()
        guard stat(path, &st) == 0 else { return }
        let file = LibraryFile(relativePath: "fuzz/\(count % 8).flac", path: path, size: Int64(st.st_size),
                               mtime: LibraryWalker.modificationTime(st))
        let outcome = try processor.process(file, previous: try store.track(relativePath: file.relativePath))
        if let record = outcome.recordToCommit { try StoreWriter.commitNow(.init(changes: [.save(record)]), store: store, flushPath: nil) }
        guard case .analysed(let record, _) = outcome else { return }
        // What the pipeline wrote, the server's readers must accept.
        let layout = processor.layout
        do {
            try FuzzTargets.readAll(VisFrameFile(path: layout.visPath(key: record.key)))
            let profile = try StoredProfile.read(Data(contentsOf: URL(fileURLWithPath: layout.profilePath(key: record.key))))
            precondition(profile.duration.isFinite && [profile.lufs, profile.gainDB].allSatisfy { $0?.isFinite ?? true },
                         "a stored profile holds a non-finite value")
            let waveform = try WaveformFile.read(datPath: layout.waveformPath(key: record.key), rmsPath: layout.waveformRMSPath(key: record.key))
            // Full scale reads back as −128/127 from 8 bits and −32768/32767 from 16.
            precondition((waveform.minima + waveform.maxima).allSatisfy { abs($0) <= 128.0 / 127 },
                         "a stored waveform holds a value beyond full scale")
        } catch {
            preconditionFailure("an analysed track's stored outputs do not read back: \(error)")
        }
    }
}

/// Runs one input: its content (after the target byte) is written to a scratch file, since every
/// reader takes a path.
final class FuzzRunner {
    let scratchPath: String

    init(scratchDirectory: String) {
        scratchPath = scratchDirectory + "/naviscan-fuzz-\(getpid()).input"
    }

    /// Returns the target run, or nil when the input names none.
    @discardableResult
    func run(_ input: UnsafeRawBufferPointer) -> FuzzTarget? {
        guard let target = FuzzTargets.target(for: input) else { return nil }
        let body = UnsafeRawBufferPointer(rebasing: input.dropFirst())
        guard let file = fopen(scratchPath, "wb") else { fatalError("cannot write \(scratchPath)") }
        if body.count > 0 { fwrite(body.baseAddress, 1, body.count, file) }
        fclose(file)
        do { try target.run(scratchPath) } catch {}
        return target
    }
}
