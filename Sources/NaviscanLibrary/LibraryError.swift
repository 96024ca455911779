/// Errors that stop a whole scan (per-file problems are recorded, never thrown).
public enum LibraryError: Error, CustomStringConvertible, Equatable {
    case libraryUnreadable(path: String, reason: String)
    case outputUnwritable(path: String, reason: String)
    case alreadyRunning(path: String, holder: String)
    case store(path: String, reason: String)

    public var description: String {
        switch self {
        case .libraryUnreadable(let path, let reason):
            return "cannot read the library \(path): \(reason)"
        case .outputUnwritable(let path, let reason):
            return "cannot write the output directory \(path) (\(reason)); if the library is read-only, pass --out DIR to write the results elsewhere"
        case .alreadyRunning(let path, let holder):
            return "another naviscan (\(holder)) is already scanning into \(path); wait for it to finish or use a different --out"
        case .store(let path, let reason):
            return "the store \(path) cannot be used: \(reason)"
        }
    }
}
