/// Errors that stop a whole scan (per-file problems are recorded, never thrown).
public enum LibraryError: Error, CustomStringConvertible, Equatable {
    case libraryUnreadable(path: String, reason: String)
    case outputUnwritable(path: String, reason: String)
    case alreadyRunning(path: String, holder: String)
    case store(path: String, reason: String)
    /// The store file is not a readable SQLite database (truncated, overwritten, damaged).
    case storeDamaged(path: String, reason: String)
    /// The store has schema steps this naviscan does not know.
    case storeFromNewerVersion(path: String, step: String)
    /// Writing the store failed part-way (disk full, I/O error, read-only): a fault, not a track's.
    case storeFault(path: String, reason: String)
    /// Writing an output file failed (disk full, quota, read-only, I/O error, the folder vanished).
    case outputFault(path: String, reason: String)
    /// A shard scan into a store that holds another shard, or the whole library (`recorded` nil).
    case shardMismatch(path: String, requested: String, recorded: String?)
    /// `naviscan merge` will not join these stores (the reason says why and what to do).
    case mergeRefused(reason: String)
    /// A shard store cannot be read (damaged, unreadable): a fault, like the output's own store.
    case mergeSourceUnreadable(path: String, reason: String)

    /// Faults of the output or the store: the scan stops, records nothing for the tracks in flight,
    /// and exits with its own status; fixing the cause and running again loses nothing.
    public var isFault: Bool {
        switch self {
        case .storeDamaged, .storeFromNewerVersion, .storeFault, .outputFault, .mergeSourceUnreadable: return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .libraryUnreadable(let path, let reason):
            return "cannot read the library \(path): \(reason)"
        case .outputUnwritable(let path, let reason):
            return "cannot write the output directory \(path) (\(reason)); if the library is read-only, pass --out DIR to write the results elsewhere"
        case .alreadyRunning(let path, let holder):
            return "another naviscan (\(holder)) is already writing into \(path); wait for it to finish or use a different --out"
        case .store(let path, let reason):
            return "the store \(path) cannot be used: \(reason)"
        case .storeDamaged(let path, let reason):
            return "the store \(path) is damaged (\(reason)); run the scan again with --rebuild-store to set it aside and start a new one (every track is analysed again)"
        case .storeFromNewerVersion(let path, let step):
            return "the store \(path) was written by a newer naviscan (schema step '\(step)'); upgrade naviscan, use a different --out, or run with --rebuild-store to set it aside and start a new one"
        case .storeFault(let path, let reason):
            return "cannot write the store \(path): \(reason)"
        case .outputFault(let path, let reason):
            return "cannot write \(path): \(reason)"
        case .mergeRefused(let reason):
            return "cannot merge: \(reason)"
        case .mergeSourceUnreadable(let path, let reason):
            return "cannot read the shard store \(path): \(reason); scan that shard again into an empty folder, then merge"
        case .shardMismatch(let path, let requested, let recorded):
            let holds = recorded.map { "shard \($0) of the library" } ?? "the whole library"
            return "\(path) holds \(holds), not shard \(requested); give each shard its own --out (then `naviscan merge` them), or scan without --shard to complete this store"
        }
    }
}
