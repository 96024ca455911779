import Foundation
import NaviscanCore
import NaviscanStore

/// Walk + store → plan. Pure decisions: file contents are reached only through `outputStamp` (to
/// see that a track's outputs are the ones its row describes) and `contentHash` (to recognise a moved
/// file), so the rules are testable without audio.
public struct ScanPlanner: Sendable {
    public var options: ScanOptions
    public var layout: OutputLayout
    /// Which stored tracks must be analysed again.
    public var freshness: TrackFreshness
    public var contentHash: @Sendable (LibraryFile) -> String? = { ContentHash.of(path: $0.path, size: $0.size) }

    /// The stamp of a track's output file (by kind and key), nil when it is absent.
    public var outputStamp: @Sendable (OutputLayout.TrackOutput, String) -> String? {
        get { freshness.outputStamp }
        set { freshness.outputStamp = newValue }
    }

    public init(options: ScanOptions) {
        self.options = options
        layout = OutputLayout(root: options.output)
        freshness = options.freshness
    }

    /// On a shard, only the shard's files and stored tracks are planned: a track of another shard is
    /// never taken for vanished (pruned or kept missing), a relink's source or target, or work. The
    /// prune guard still looks at the whole walk (an empty library is a mount that is down, however
    /// few tracks this shard has) and counts the shard's own tracks for its threshold.
    public func plan(listing whole: LibraryListing, stored allStored: [TrackRecord], identity: LibraryIdentity) -> ScanPlan {
        var plan = ScanPlan()
        var listing = whole
        var stored = allStored
        if let shard = options.shard {
            listing.files.removeAll { !shard.contains(relativePath: $0.relativePath) }
            stored.removeAll { !shard.contains(relativePath: $0.relativePath) }
        }
        plan.files = listing.files.count
        plan.unsupported = whole.unsupported.count
        plan.otherShardFiles = whole.files.count - listing.files.count
        plan.otherShardTracks = allStored.count - stored.count
        // Rows by index, not by value: a row is a dozen strings, and 100,000 copies of each cost more
        // than the whole plan otherwise does.
        var rowByPath: [String: Int] = [:]
        rowByPath.reserveCapacity(stored.count)
        for (index, record) in stored.enumerated() { rowByPath[record.relativePath] = index }

        // Each file's row, and whether it must be analysed again: the checks stat each track's
        // outputs, so they are spread over the scan's threads.
        let files = listing.files
        let (rows, storedRows) = (rowByPath, stored)
        // Each chunk writes its own indices only.
        nonisolated(unsafe) let rowOfFile = UnsafeMutableBufferPointer<Int>.allocate(capacity: files.count)
        nonisolated(unsafe) let works = UnsafeMutableBufferPointer<TrackWork?>.allocate(capacity: files.count)
        _ = works.initialize(repeating: nil)
        defer {
            rowOfFile.deallocate()
            works.deinitialize()
            works.deallocate()
        }
        let chunks = max(1, min(options.jobs, files.count / 1000))
        DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
            for i in (files.count * chunk / chunks)..<(files.count * (chunk + 1) / chunks) {
                let row = rows[files[i].relativePath] ?? -1
                rowOfFile[i] = row
                works[i] = row < 0 ? .full : freshness.work(files[i], storedRows[row])
            }
        }
        var present = [Bool](repeating: false, count: stored.count)
        for row in rowOfFile where row >= 0 { present[row] = true }

        var vanished: [TrackRecord] = []
        for (row, record) in stored.enumerated() where !present[row] {
            if listing.isUnverified(record.relativePath) { plan.unverified += 1 } else { vanished.append(record) }
        }

        // Moved files: a new path whose audio matches a vanished row is re-linked, not decoded.
        var relinked: Set<String> = []
        if !vanished.isEmpty {
            var candidates = Dictionary(grouping: vanished.filter { $0.status == .ok && $0.contentHash != nil && freshness.current($0) }, by: \.size)
            for (i, file) in files.enumerated() where rowOfFile[i] < 0 {
                guard var sameSize = candidates[file.size], !sameSize.isEmpty, let hash = contentHash(file),
                      let match = sameSize.firstIndex(where: { $0.contentHash == hash }) else { continue }
                plan.relinks.append(Relink(from: sameSize[match], to: file))
                relinked.insert(file.relativePath)
                sameSize.remove(at: match)
                candidates[file.size] = sameSize
            }
            let moved = Set(plan.relinks.map(\.from.relativePath))
            vanished.removeAll { moved.contains($0.relativePath) }
        }

        // --prune overrides the guard, except for an empty library: that is a mount that is down
        // far more often than a library deleted on purpose.
        let held = pruneGuard(listing: whole, storedCount: stored.count, vanished: vanished.count, identity: identity)
        if let held, !(options.prune && !whole.files.isEmpty) {
            plan.pruneHeldBack = held
            plan.keptMissing = vanished
        } else {
            plan.prune = vanished
        }
        plan.libraryTrusted = plan.pruneHeldBack == nil && !whole.files.isEmpty

        for (i, file) in files.enumerated() {
            guard rowOfFile[i] >= 0 else {
                if !relinked.contains(file.relativePath) { plan.work.append(WorkItem(file: file, previous: nil)) }
                continue
            }
            let record = stored[rowOfFile[i]]
            if record.missingSince != nil { plan.reappeared.append(record.relativePath) }
            if let work = works[i] {
                plan.work.append(WorkItem(file: file, previous: record, work: work))
            } else if record.status == .failed {
                plan.knownFailures.append(ScanFailure(relativePath: file.relativePath, reason: record.errorMessage ?? "failed", known: true))
            } else {
                plan.unchanged += 1
            }
        }
        // Longest first (file size stands in for duration), so a long file does not finish last alone.
        plan.work.sort { $0.file.size > $1.file.size }
        return plan
    }

    /// Why vanished tracks must be kept rather than pruned, or nil when pruning is safe.
    func pruneGuard(listing: LibraryListing, storedCount: Int, vanished: Int, identity: LibraryIdentity) -> String? {
        guard vanished > 0 else { return nil }
        if listing.files.isEmpty {
            return "the library folder \(options.library) holds no audio files (is its disk mounted?)"
        }
        if let device = identity.device, device != listing.rootDevice {
            return "the library folder \(options.library) is on another device than at the last scan (a mount that is down or changed)"
        }
        if let root = identity.root, root != options.library {
            return "this store was made for the library \(root), not \(options.library)"
        }
        if Double(vanished) > options.pruneThreshold * Double(storedCount) {
            let percent = Int((Double(vanished) / Double(storedCount) * 100).rounded())
            return "\(vanished) of \(storedCount) stored tracks (\(percent) %) are gone from the library, more than the \(Int(options.pruneThreshold * 100)) % a scan removes by itself"
        }
        return nil
    }
}
