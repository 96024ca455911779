import Foundation

/// Writes the onset front end's band levels to a file for the tempo-model scripts
/// (scripts/tempo-model), or the similarity features' log band powers for
/// scripts/similarity-model: little-endian Float32, hops (or measured spectra) × bands, in the order
/// they are made. The file appears under its name only when `close()` succeeds (temp name, sync, rename).
public final class OnsetBandDump: OnsetBandObserver {
    public enum Stream: Sendable { case onsetLevels, timbreBands }
    public let path: String
    public let stream: Stream
    private let temporaryPath: String
    private let handle: FileHandle
    private var buffer: [Float] = []
    private var failure: Error?
    private static let flushCount = 1 << 16

    public init(path: String, stream: Stream = .onsetLevels) throws {
        self.path = path
        self.stream = stream
        temporaryPath = path + ".tmp-\(ProcessInfo.processInfo.processIdentifier)"
        guard FileManager.default.createFile(atPath: temporaryPath, contents: nil) else {
            throw OnsetBandDumpError(description: "cannot create \(temporaryPath): check that its folder exists and is writable")
        }
        handle = try FileHandle(forWritingTo: URL(fileURLWithPath: temporaryPath))
        buffer.reserveCapacity(Self.flushCount + 64)
    }

    public func observe(levels: UnsafeBufferPointer<Float>) {
        if stream == .onsetLevels { append(levels) }
    }

    public func observe(timbreBands: UnsafeBufferPointer<Float>) {
        if stream == .timbreBands { append(timbreBands) }
    }

    private func append(_ values: UnsafeBufferPointer<Float>) {
        buffer.append(contentsOf: values)
        if buffer.count >= Self.flushCount { flush() }
    }

    public func finish() { flush() }

    /// Syncs the file and gives it its name; throws when any write failed.
    public func close() throws {
        flush()
        do {
            if let failure { throw failure }
            try handle.synchronize()
            try handle.close()
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
            try FileManager.default.moveItem(atPath: temporaryPath, toPath: path)
        } catch {
            try? FileManager.default.removeItem(atPath: temporaryPath)
            throw OnsetBandDumpError(description: "cannot write the onset band dump \(path): \(error.localizedDescription)")
        }
    }

    private func flush() {
        guard !buffer.isEmpty, failure == nil else { return }
        do {
            try handle.write(contentsOf: buffer.map { $0.bitPattern.littleEndian }.withUnsafeBytes { Data($0) })
        } catch {
            failure = error
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

public struct OnsetBandDumpError: Error, CustomStringConvertible {
    public let description: String
}
