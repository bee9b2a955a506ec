/// Why chain text could not be parsed. Each message names the offending token and the valid choices.
public enum ChainSyntaxError: Error, CustomStringConvertible, Equatable, Sendable {
    /// `a || b` or a trailing `|`: a filter slot with no filter in it.
    case emptyFilter(position: Int)
    case unknownFilter(name: String, validNames: [String])
    case unknownKey(filter: String, key: String, validKeys: [String])
    case badValue(filter: String, key: String, value: String, expected: String)
    /// A value without `key=` that no positional parameter of the filter accepts.
    case unexpectedValue(filter: String, value: String, expected: String)
    case duplicateKey(filter: String, key: String)
    case missingParameter(filter: String, key: String, expected: String)
    /// Parameters that do not make sense together (e.g. two sizes for `scale`).
    case conflict(filter: String, message: String)
    /// A `"` with no closing one.
    case unterminatedQuote
    /// A NUL (U+0000) in the chain: number parsing stops at one, so `1\0junk` would read as 1.
    case nulCharacter
    /// A file the chain's file access does not let it read (`ChainFileAccess`): a live change
    /// naming a file outside the folder it may read from (`folder`), or any file when it may read
    /// none. Decided before the file is touched, so it reads the same whether or not it exists.
    case fileNotAllowed(filter: String, key: String, path: String, folder: Bool)
    /// An error on a line of a chain file (1-based).
    indirect case onLine(Int, ChainSyntaxError)

    /// The token the error is about.
    public var token: String {
        switch self {
        case let .emptyFilter(position): "|#\(position)"
        case let .unknownFilter(name, _): name
        case let .unknownKey(_, key, _): key
        case let .badValue(_, key, value, _): "\(key)=\(value)"
        case let .unexpectedValue(_, value, _): value
        case let .duplicateKey(_, key): key
        case let .missingParameter(_, key, _): key
        case let .conflict(filter, _): filter
        case .unterminatedQuote: "\""
        case .nulCharacter: "NUL"
        case let .fileNotAllowed(_, key, path, _): "\(key)=\(path)"
        case let .onLine(_, error): error.token
        }
    }

    public var description: String {
        switch self {
        case let .emptyFilter(position):
            "empty filter at position \(position): write filters as 'name args' separated by '|'"
        case let .unknownFilter(name, valid):
            "unknown filter '\(name)'; valid filters: \(valid.joined(separator: ", "))"
        case let .unknownKey(filter, key, valid):
            "\(filter): unknown parameter '\(key)'; valid parameters: \(valid.joined(separator: ", "))"
        case let .badValue(filter, key, value, expected):
            "\(filter): bad value '\(value)' for \(key); expected \(expected)"
        case let .unexpectedValue(filter, value, expected):
            "\(filter): unexpected value '\(value)'; expected \(expected)"
        case let .duplicateKey(filter, key):
            "\(filter): parameter '\(key)' given twice"
        case let .missingParameter(filter, key, expected):
            "\(filter): missing parameter '\(key)' (\(expected))"
        case let .conflict(filter, message):
            "\(filter): \(message)"
        case .unterminatedQuote:
            "a quote (\") is not closed: write text as \"…\" with \\\" for a quote inside"
        case .nulCharacter:
            "the chain holds a NUL character (U+0000): remove it"
        case let .fileNotAllowed(filter, key, path, folder):
            folder ? "\(filter): \(key) '\(path)' is not allowed: only files in the chain's folder may be read (a relative path starts there; "
                + ".. and symbolic links may not lead out)"
                : "\(filter): \(key) '\(path)' is not allowed: this chain may read no files"
        case let .onLine(line, error):
            "line \(line): \(error)"
        }
    }
}
