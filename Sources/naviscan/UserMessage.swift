import Foundation
import NaviscanCore
import NaviscanLibrary

/// Turns an error into a sentence for a user: what went wrong with which thing, without NSError
/// domains or library-internal text.
enum UserMessage {
    static func describe(_ error: Error) -> String {
        switch error {
        case let error as CLIError: return error.message
        case let error as LibraryError: return error.description
        case let error as DecodeError: return error.description
        default:
            let ns = error as NSError
            guard ns.domain == NSCocoaErrorDomain || ns.domain == NSPOSIXErrorDomain else { return "\(error)" }
            let path = ns.userInfo[NSFilePathErrorKey] as? String
            return plainReason(error) + (path.map { ": \($0)" } ?? "")
        }
    }
}
