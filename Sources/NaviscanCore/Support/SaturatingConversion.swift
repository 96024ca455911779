extension Int {
    /// `value` rounded toward zero and held inside Int's range; NaN is 0. `Int(_:)` traps on NaN,
    /// an infinity or a value beyond ±2^63, and any number that comes from a file or from decoded
    /// audio may be one of those: every such conversion goes through here.
    public init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= 9.223_372_036_854_775e18 {
            self = .max
        } else if value <= -9.223_372_036_854_775e18 {
            self = .min
        } else {
            self = Int(value)
        }
    }

    /// The Float form of `init(saturating:)`.
    public init(saturating value: Float) { self.init(saturating: Double(value)) }
}
