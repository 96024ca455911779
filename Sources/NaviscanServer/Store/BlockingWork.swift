import Foundation
import NIOConcurrencyHelpers

/// Blocking work (the store's synchronous reads, building the similarity index, scanning its
/// vectors) runs on dispatch threads, never on Swift concurrency's cooperative threads. Those are
/// as many as cores, and GRDB hands a reader back only after its async read resumes on one: with
/// them all blocked in synchronous reads waiting for a reader, nothing resumes and the whole server,
/// /health and SIGTERM included, stops for good (issue 51).
package enum BlockingWork {
    package static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// `task`'s value, or CancellationError as soon as the waiting task is cancelled (a shutdown
    /// past its grace period), leaving `task` to finish on its own: a waiter never holds shutdown.
    package static func value<T: Sendable>(of task: Task<T, Error>) async throws -> T {
        let waiting = NIOLockedValueBox<CheckedContinuation<T, Error>?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiting.withLockedValue { $0 = continuation }
                Task {
                    let result = await task.result
                    waiting.withLockedValue { $0.take() }?.resume(with: result)
                }
                if Task.isCancelled { waiting.withLockedValue { $0.take() }?.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            waiting.withLockedValue { $0.take() }?.resume(throwing: CancellationError())
        }
    }
}
