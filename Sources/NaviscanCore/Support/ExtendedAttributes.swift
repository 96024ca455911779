#if os(Linux)
import CSystemShims
import Glibc

/// A file's extended attributes (POSIX ACLs among them: `system.posix_acl_access`), carried from a
/// file to its replacement so that whoever could read the old file can read the new one.
public enum ExtendedAttributes {
    /// Gives `to` exactly the attributes of `from` (both open descriptors). Returns 0, or errno.
    public static func copy(from: Int32, to: Int32) -> Int32 {
        naviscan_xattr_copy(from, to) == 0 ? 0 : errno
    }

    /// Whether both open files carry the same attributes and values; nil (with errno) when they
    /// could not be read.
    public static func equal(_ a: Int32, _ b: Int32) -> Bool? {
        switch naviscan_xattr_equal(a, b) {
        case 1: return true
        case 0: return false
        default: return nil
        }
    }
}
#else
/// Extended attributes are carried on Linux only (macOS builds; its tagging keeps none).
public enum ExtendedAttributes {
    public static func copy(from: Int32, to: Int32) -> Int32 { 0 }
    public static func equal(_ a: Int32, _ b: Int32) -> Bool? { true }
}
#endif
