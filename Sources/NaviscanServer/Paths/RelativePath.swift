/// Library-relative paths as clients send them. Checked lexically, before anything touches the
/// file system: absolute paths, `..`, `.`, empty components and NUL are refused. (A backslash is an
/// ordinary file-name character on the systems naviscan serves from, not a separator.)
enum RelativePath {
    static func validate(_ raw: String?) throws -> String {
        guard let path = raw, !path.isEmpty else { throw APIError.badRequest("relative_path is required") }
        guard !path.hasPrefix("/") else { throw APIError.badRequest("relative_path must be relative to the library, not absolute") }
        guard !path.contains("\0") else { throw APIError.badRequest("relative_path contains a NUL byte") }
        for component in path.split(separator: "/", omittingEmptySubsequences: false) {
            if component.isEmpty || component == "." || component == ".." {
                throw APIError.badRequest("relative_path must not contain empty, '.' or '..' components")
            }
        }
        return path
    }
}
