import Foundation
import NaviscanCore

/// How the server words a stored output that could not be served: whether it is gone, whether the
/// failure may pass, and the reason in words that name no path on the server's disk.
enum StoredOutputError {
    /// Any of `files` is absent (deleted by hand, a cleaned cache): the output is missing, not damaged.
    static func isMissing(_ files: [String]) -> Bool {
        files.contains { file in
            var st = stat()
            return SystemPath.withCString(file) { lstat($0, &st) } != 0 && errno == ENOENT
        }
    }

    /// A read of an existing file that failed in the system (I/O error, permission): the stored
    /// output may be whole; it is not marked.
    static func isTransient(_ error: Error) -> Bool {
        if let error = error as? VisFrameError, case .io = error { return true }
        if let error = error as? WaveformError, case .unreadable = error { return true }
        return false
    }

    /// What is wrong with the content, without the file's path; nil when only the path would say it.
    static func reason(_ error: Error) -> String? {
        switch error {
        case let error as VisFrameError:
            switch error {
            case .io, .notARegularFile: return nil
            default: return error.description
            }
        case let error as WaveformError:
            if case .notAWaveform(_, let reason) = error { return reason }
            return nil
        case let error as StoredProfileError:
            return error.description
        default:
            return nil
        }
    }
}
