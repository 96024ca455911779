import Foundation

/// Total size of the frame files, recomputed at most every 30 s (a walk of the vis/ folders).
actor VisCacheSize {
    let directory: String
    private var cached: (bytes: Int64, at: Date)?

    init(directory: String) { self.directory = directory }

    func bytes() async -> Int64 {
        if let cached, Date().timeIntervalSince(cached.at) < 30 { return cached.bytes }
        let directory = self.directory
        let total = await Task.detached { () -> Int64 in
            var sum: Int64 = 0
            let enumerator = FileManager.default.enumerator(at: URL(fileURLWithPath: directory), includingPropertiesForKeys: [.fileSizeKey])
            while let url = enumerator?.nextObject() as? URL {
                guard url.pathExtension == "vis" else { continue }
                sum += Int64((try? url.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0)
            }
            return sum
        }.value
        cached = (total, Date())
        return total
    }
}
