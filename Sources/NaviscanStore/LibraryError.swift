import Foundation
import NaviscanCore

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
    /// A store opened read-only (a shard being merged) has another schema than this naviscan's.
    case storeSchemaDiffers(path: String)
    /// The store or its folder cannot be written (permissions, a read-only mount).
    case storeUnwritable(path: String, reason: String)
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
    /// Navidrome's database (`--navidrome-db`) cannot be read.
    case navidromeDatabase(path: String, reason: String)

    /// Faults of the output or the store: the scan stops, records nothing for the tracks in flight,
    /// and exits with its own status; fixing the cause and running again loses nothing.
    public var isFault: Bool {
        switch self {
        case .storeDamaged, .storeFromNewerVersion, .storeSchemaDiffers, .storeUnwritable, .storeFault, .outputFault, .mergeSourceUnreadable: return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .libraryUnreadable(let path, let reason):
            return "cannot read the library \(path): \(reason)"
        case .outputUnwritable(let path, let reason):
            return "cannot write the output directory \(path) (\(reason))"
        case .alreadyRunning(let path, let holder):
            return "another naviscan (\(holder)) is already writing into \(path); wait for it to finish"
        case .store(let path, let reason):
            return "the store \(path) cannot be used: \(reason)"
        case .navidromeDatabase(let path, let reason):
            return "Navidrome's database \(path) \(reason)"
        case .storeDamaged(let path, let reason):
            return "the store \(path) is damaged (\(reason))"
        case .storeFromNewerVersion(let path, let step):
            return "the store \(path) was written by a newer naviscan (schema step '\(step)'); upgrade naviscan"
        case .storeSchemaDiffers(let path):
            return "the store \(path) was written by another naviscan version (its schema differs)"
        case .storeUnwritable(let path, let reason):
            return "cannot write the store \(path) (\(reason)); check the permissions of its folder"
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
            return "\(path) holds \(holds), not shard \(requested)"
        }
    }
}

extension LibraryError {
    /// The store file a store error is about (nil for the other errors).
    package var storePath: String? {
        switch self {
        case .store(let path, _), .storeDamaged(let path, _), .storeFromNewerVersion(let path, _), .storeSchemaDiffers(let path),
             .storeUnwritable(let path, _), .storeFault(let path, _):
            return path
        default:
            return nil
        }
    }

    /// The error as a fault of the output or the store (nil when it is a file's own problem): the
    /// run stops on these.
    package static func fault(_ error: Error) -> LibraryError? {
        switch error {
        case let error as OutputFileError:
            return .outputFault(path: error.path, reason: OutputFault.advice(code: error.code, fallback: error.reason))
        case let error as LibraryError:
            if error.isFault { return error }
            if case .outputUnwritable(let path, let reason) = error { return .outputFault(path: path, reason: reason) }
            return nil
        default:
            return nil
        }
    }
}

/// Plain words for the errors an output directory meets.
enum OutputFault {
    static func advice(code: Int32, fallback: String) -> String {
        switch code {
        case ENOSPC: return "the disk is full; free some space and run again"
        case EDQUOT: return "the disk quota is used up; raise it and run again"
        case EROFS: return "the file system is read-only; remount it read-write and run again"
        case EIO: return "an I/O error; check the disk, then run again"
        case ENOENT: return "the output folder vanished (an unmounted disk?); mount it and run again"
        case EACCES, EPERM: return "permission denied; make the output folder writable and run again"
        default: return fallback
        }
    }
}
