/// An error the user can act on: printed as "naviscan: MESSAGE", exit status `code`
/// (2: usage or a fatal problem before any work was done; see `scan`'s help).
struct CLIError: Error, CustomStringConvertible {
    let message: String
    let code: Int32

    init(_ message: String, code: Int32 = 2) {
        self.message = message
        self.code = code
    }

    var description: String { message }
}
