import Foundation
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanStore

/// What the controllers share: the store, where its files are, the library, and the server's own
/// workers. Made once by `NaviscanAPI.makeApplication`.
struct ServerServices: Sendable {
    let configuration: ServerConfiguration
    let layout: OutputLayout
    /// The store, reopened after an outage (see `StoreHandle`).
    let storeHandle: StoreHandle
    var store: LibraryStore { storeHandle.current }
    /// The library root: the configured one, else the one the last scan recorded.
    let library: String?
    let hub: PushHub
    /// The paths clients send, resolved to stored tracks (`TrackPaths`).
    let paths: TrackPaths
    let precompute: PrecomputeQueue
    let maintainer: LibraryMaintainer?
    let visSize: VisCacheSize
    let connections: ConnectionRegistry
    let logger: Logger

    /// The files of the web page, nil when they are not installed.
    let web: WebAssets?

    /// How many tracks wait for analysis: precompute's queue and the background scan's.
    func pending() async -> Int {
        await precompute.count + (maintainer?.status().pending ?? 0)
    }

    /// A stored output that a reader rejected or could not find: logged (with the file's path, for
    /// the admin), marked in the store so nothing serves it and the next scan analyses the track
    /// again, and answered 404 when the file is gone, else 500. Answers name the track, never a path
    /// on the server's disk; a read that failed for a reason that may pass (an I/O error) marks nothing.
    func damaged(_ path: String, _ output: DamagedOutput, _ error: Error, files: [String] = []) async -> APIError {
        let what = output.rawValue
        // The whole store gone (an unmounted share) is not damage to this track: nothing is marked.
        if let reason = storeHandle.unavailable { return APIError(status: .serviceUnavailable, message: reason) }
        let missing = StoredOutputError.isMissing(files)
        logger.warning(missing ? "missing stored output" : "damaged stored output",
                       metadata: ["path": "\(path)", "output": "\(what)", "error": "\(error)"])
        if !missing, StoredOutputError.isTransient(error) {
            return APIError(status: .internalServerError, message: "cannot read the stored \(what) of \(path) (an I/O error; the server log names the file); retry later")
        }
        do { try await store.markNeedsAnalysis(relativePath: path, output: output) } catch {
            logger.error("could not mark a damaged output", metadata: ["path": "\(path)", "error": "\(error)"])
        }
        if missing {
            return APIError.notFound("the stored \(what) of \(path) are missing; the track is marked for re-analysis by the next scan")
        }
        let reason = StoredOutputError.reason(error).map { " (\($0))" } ?? ""
        return APIError(status: .internalServerError,
                        message: "the stored \(what) of \(path) are damaged\(reason); the track is marked for re-analysis by the next scan")
    }
}
