import Foundation
import NaviscanCore
import NaviscanLibrary
import NaviscanServer
import NaviscanStore

/// Turns an error into a sentence for a user: what went wrong with which thing, without NSError
/// domains or library-internal text.
enum UserMessage {
    static func describe(_ error: Error) -> String {
        switch error {
        case let error as CLIError: return error.message
        case let error as LibraryError: return error.description + advice(error)
        case let error as DecodeError: return error.description
        case let error as AccessTokenError: return error.description(tokenSetting: Settings.token.howToSet)
        default:
            let ns = error as NSError
            guard ns.domain == NSCocoaErrorDomain || ns.domain == NSPOSIXErrorDomain else { return "\(error)" }
            let path = ns.userInfo[NSFilePathErrorKey] as? String
            return plainReason(error) + (path.map { ": \($0)" } ?? "")
        }
    }

    /// What to do about a library error, in the command line's words (its flags).
    static func advice(_ error: LibraryError) -> String {
        switch error {
        case .outputUnwritable: return "; if the library is read-only, pass --out DIR to write the results elsewhere"
        case .alreadyRunning: return ", or use a different --out"
        case .storeDamaged: return "; run the scan again with --rebuild-store to set it aside and start a new one (every track is analysed again)"
        case .storeFromNewerVersion: return ", use a different --out, or run with --rebuild-store to set it aside and start a new one"
        case .storeUnwritable, .outputFault: return " (or use another --out)"
        case .shardMismatch: return "; give each shard its own --out (then `naviscan merge` them), or scan without --shard to complete this store"
        default: return ""
        }
    }
}
