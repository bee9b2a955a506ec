/// A filter's numeric parameter, declared once on the filter type (`Sharpen.Parameters.amount`):
/// its key in the chain grammar, the values it accepts, its default and what it does.
///
/// Everything that needs one of these facts reads it here: the filter's initialiser takes its
/// default, the filter's own check refuses a value outside the range with a message made from it,
/// the grammar parses and bounds it, `livefilter filters` lists it, and the player's sliders take
/// their ends from it. So a range or a default is changed in one line. libavfilter's `AVOption`
/// tables and GStreamer's `GParamSpec`s keep the same facts in the same place: beside the filter.
public struct NumericParameter<Value: Comparable & Sendable>: Sendable {
    public let key: String
    public let range: ClosedRange<Value>
    /// nil when the parameter has to be given.
    public let defaultValue: Value?
    /// What it does, in which unit: the help text.
    public let summary: String
    /// `.number(range)` or `.integer(range)`: how the grammar reads it.
    public let kind: ParameterDefinition.Kind
    /// The value as the grammar writes it: 100, not 100.0.
    let spell: @Sendable (Value) -> String
    let read: @Sendable (ParameterValue) -> Value?

    /// The range as messages say it: `0…100`.
    public var rangeText: String { "\(spell(range.lowerBound))…\(spell(range.upperBound))" }

    /// Throws, naming the parameter, its range and `value`, when the value lies outside the range;
    /// `filter` (its description) is only written then.
    public func check(_ value: Value, filter: @autoclosure () -> String) throws(FilterError) {
        guard range.contains(value) else {
            throw .invalidGeometry(filter: filter(), reason: "\(key) must be \(rangeText), got \(spell(value))")
        }
    }

    /// `key=value` for a filter's description; nil at the default, which descriptions leave out.
    func argument(_ value: Value) -> String? {
        value == defaultValue ? nil : "\(key)=\(spell(value))"
    }
}

extension NumericParameter where Value == Double {
    public init(_ key: String, in range: ClosedRange<Double>, default defaultValue: Double? = nil, summary: String) {
        precondition(defaultValue.map(range.contains) ?? true, "\(key): the default lies outside \(range)")
        self.init(key: key, range: range, defaultValue: defaultValue, summary: summary, kind: .number(range), spell: formatNumber,
                  read: { if case let .number(value) = $0 { value } else { nil } })
    }
}

extension NumericParameter where Value == Int {
    public init(_ key: String, in range: ClosedRange<Int>, default defaultValue: Int? = nil, summary: String) {
        precondition(defaultValue.map(range.contains) ?? true, "\(key): the default lies outside \(range)")
        self.init(key: key, range: range, defaultValue: defaultValue, summary: summary, kind: .integer(range), spell: { String($0) },
                  read: { if case let .integer(value) = $0 { value } else { nil } })
    }
}

/// A filter's parameter that is not a number on a line: one of a few names, a colour, an anchor.
/// Declared once on the filter type, like `NumericParameter`, and always with a default.
public struct ValueParameter<Value: Equatable & Sendable>: Sendable {
    public let key: String
    public let defaultValue: Value
    public let summary: String
    public let kind: ParameterDefinition.Kind
    let spell: @Sendable (Value) -> String
    let read: @Sendable (ParameterValue) -> Value?

    /// `key=value` for a filter's description; nil at the default, which descriptions leave out.
    func argument(_ value: Value) -> String? {
        value == defaultValue ? nil : "\(key)=\(spell(value))"
    }
}

extension ValueParameter where Value: CaseIterable & RawRepresentable, Value.RawValue == String {
    /// One of the cases, written as its raw value.
    public static func choice(_ key: String, default defaultValue: Value, summary: String) -> Self {
        Self(key: key, defaultValue: defaultValue, summary: summary, kind: .choice(Value.allCases.map(\.rawValue)), spell: \.rawValue,
             read: { if case let .choice(name) = $0 { Value(rawValue: name) } else { nil } })
    }
}

extension ValueParameter where Value == RGBColor {
    /// A colour, written `#RRGGBB`.
    public static func color(_ key: String, default defaultValue: RGBColor, summary: String) -> Self {
        Self(key: key, defaultValue: defaultValue, summary: summary, kind: .color, spell: \.description,
             read: { if case let .color(color) = $0 { color } else { nil } })
    }
}

extension ValueParameter where Value == Anchor {
    /// `x=` and `y=` of a thing placed on the picture: where its left and top edges go, each `N`,
    /// `N%`, or a side's name with `±N` (see `Anchor`), both `spelled` when not given.
    public static func placement(default spelled: String, of thing: String) -> (x: Self, y: Self) {
        (anchor("x", vertical: false, default: spelled, example: "right-16", summary: "\(thing)'s left edge"),
         anchor("y", vertical: true, default: spelled, example: "bottom-16", summary: "\(thing)'s top edge"))
    }

    private static func anchor(_ key: String, vertical: Bool, default spelled: String, example: String, summary: String) -> Self {
        let names = vertical ? "top|middle|bottom" : "left|center|right"
        return Self(key: key, defaultValue: Anchor(spelled, vertical: vertical)!, summary: summary,
                    kind: .text("N, N%, \(names)[±N], e.g. \(example)"), spell: \.description,
                    read: { if case let .text(text) = $0 { Anchor(text, vertical: vertical) } else { nil } })
    }
}

extension ParameterDefinition {
    /// The grammar's entry for a filter's own parameter; `positional` is the grammar's choice.
    init<Value>(_ parameter: NumericParameter<Value>, positional: Bool = false) {
        self.init(key: parameter.key, kind: parameter.kind, positional: positional,
                  defaultValue: parameter.defaultValue.map(parameter.spell), summary: parameter.summary)
    }

    init<Value>(_ parameter: ValueParameter<Value>, positional: Bool = false) {
        self.init(key: parameter.key, kind: parameter.kind, positional: positional,
                  defaultValue: parameter.spell(parameter.defaultValue), summary: parameter.summary)
    }
}

/// The parsed values of one filter, read by their declarations instead of by key strings.
extension Dictionary where Key == String, Value == ParameterValue {
    subscript<Number>(_ parameter: NumericParameter<Number>) -> Number? {
        self[parameter.key].flatMap(parameter.read)
    }

    subscript<Given>(_ parameter: ValueParameter<Given>) -> Given? {
        self[parameter.key].flatMap(parameter.read)
    }

    /// The value of a parameter without a default, or the error that says what to give.
    func required<Number>(_ parameter: NumericParameter<Number>, filter: String) throws(ChainSyntaxError) -> Number {
        guard let value = self[parameter] else {
            throw .missingParameter(filter: filter, key: parameter.key,
                                    expected: "\(parameter.summary): \(parameter.kind.expected)")
        }
        return value
    }
}
