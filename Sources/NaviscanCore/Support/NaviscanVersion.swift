/// The analyser's name and version, recorded in every profile and used to invalidate stored results.
public enum NaviscanVersion {
    public static let name = "naviscan"
    public static let version = "0.6.0"
}
