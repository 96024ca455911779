import Foundation
import GRDB

/// Navidrome's own database, read only, to turn the song IDs its clients send into file paths.
///
/// A Navidrome song ID cannot be computed from the file: it is given on first import (from a
/// configurable "persistent ID" of tags and library number) and kept when the file moves or its tags
/// change. Navidrome's `media_file` table is the only place that knows it. Navidrome 0.55 and later
/// store the path relative to the library's folder (`library.path`); earlier versions store it
/// absolute (under the music folder). naviscan never writes this file.
public final class NavidromeDatabase: @unchecked Sendable {
    public let path: String
    private let database: DatabaseQueue

    public init(path: String) throws {
        self.path = path
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(5)
        do {
            database = try DatabaseQueue(path: path, configuration: configuration)
            let hasTable = try database.read { try $0.tableExists("media_file") }
            guard hasTable else { throw LibraryError.navidromeDatabase(path: path, reason: "is not Navidrome's database (it has no media_file table); name navidrome.db in Navidrome's data folder") }
        } catch let error as LibraryError {
            throw error
        } catch {
            throw LibraryError.navidromeDatabase(path: path, reason: "cannot be read (\(Self.reason(error))); naviscan needs read access to it and to Navidrome's data folder")
        }
    }

    /// A song as Navidrome knows it: its path as stored and the folder of its library (nil for
    /// versions without libraries).
    public struct Song: Sendable, Equatable {
        public var path: String
        public var libraryFolder: String?
    }

    /// The song with Navidrome ID `id`, or nil.
    public func song(id: String) throws -> Song? {
        do {
            return try database.read { db in
                let hasLibraries = try db.tableExists("library") && db.columns(in: "media_file").contains { $0.name == "library_id" }
                let sql = hasLibraries
                    ? "SELECT m.path AS path, l.path AS folder FROM media_file m LEFT JOIN library l ON l.id = m.library_id WHERE m.id = ?"
                    : "SELECT path, NULL AS folder FROM media_file WHERE id = ?"
                guard let row = try Row.fetchOne(db, sql: sql, arguments: [id]) else { return nil }
                return Song(path: row["path"], libraryFolder: row["folder"])
            }
        } catch {
            throw LibraryError.navidromeDatabase(path: path, reason: "cannot be read (\(Self.reason(error)))")
        }
    }

    /// The song's path relative to its library folder: as stored when relative; an absolute one
    /// with its library folder, or else `musicFolder`, taken off; nil when it lies under neither.
    public static func relativePath(of song: Song, musicFolder: String?) -> String? {
        guard song.path.hasPrefix("/") else { return song.path }
        for folder in [song.libraryFolder, musicFolder].compactMap({ $0 }) {
            let prefix = folder.hasSuffix("/") ? folder : folder + "/"
            if song.path.hasPrefix(prefix) { return String(song.path.dropFirst(prefix.count)) }
        }
        return nil
    }

    private static func reason(_ error: Error) -> String {
        (error as? DatabaseError)?.message ?? "\(error)"
    }
}
