import Foundation
import NaviscanCore
import NaviscanLibrary

/// A client-named track resolved to a file the server may read: never hidden, never outside the
/// library once symlinks are resolved (a symlinked track whose target stays in the library is
/// fine), a regular file, of a type a scan would analyse.
enum LibraryTrackFile {
    static func resolve(_ relativePath: String, library: String) throws -> LibraryFile {
        if relativePath.split(separator: "/").contains(where: { $0.hasPrefix(".") }) {
            throw APIError.badRequest("\(relativePath): hidden files and folders are not part of the library")
        }
        let ext = relativePath.split(separator: ".").last.map { $0.lowercased() } ?? ""
        guard relativePath.contains("."), LibraryWalker.supportedExtensions.contains(ext) else {
            throw APIError(status: .unsupportedMediaType, message: "\(relativePath): not an audio type naviscan analyses")
        }
        let absolute = library + "/" + relativePath
        guard let realLibrary = realPath(library) else {
            throw APIError(status: .serviceUnavailable, message: "the library \(library) cannot be read; is its disk mounted?")
        }
        guard let real = realPath(absolute) else { throw APIError.notFound("no file \(relativePath) in the library") }
        guard real.hasPrefix(realLibrary.hasSuffix("/") ? realLibrary : realLibrary + "/") else {
            throw APIError(status: .forbidden, message: "\(relativePath) leads outside the library")
        }
        var st = stat()
        guard SystemPath.withCString(real, { stat($0, &st) }) == 0 else { throw APIError.notFound("no file \(relativePath) in the library") }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw APIError.badRequest("\(relativePath) is not a regular file")
        }
        return LibraryFile(relativePath: relativePath, path: absolute, size: Int64(st.st_size),
                           mtime: LibraryWalker.modificationTime(path: absolute) ?? 0)
    }

    private static func realPath(_ path: String) -> String? {
        SystemPath.withCString(path) { cPath -> String? in
            guard let resolved = realpath(cPath, nil) else { return nil }
            defer { free(resolved) }
            return SystemPath.string(fromCString: resolved)
        }
    }
}
