/// One word of a filter: `value` or `key=value`, quotes removed. `equals` is the first `=` outside
/// quotes, so `text "a=b"` is a value and `text="a=b"` a key and its value. Its index is a Unicode
/// scalar's: `=` followed by a combining mark is one `Character` but still the separator.
struct ChainToken: Sendable {
    var text: String
    var equals: String.Index?

    init(_ text: String, equals: String.Index? = nil) {
        self.text = text
        self.equals = equals
    }

    /// A word as printed by `description` (already quoted where needed): split it again.
    init(printed: Substring) {
        self = (try? ChainTokenizer.tokens(String(printed)))?.first ?? ChainToken(String(printed))
    }

    var key: String? { equals.map { String(text.unicodeScalars[..<$0]) } }
    var value: String { equals.map { String(text.unicodeScalars[text.unicodeScalars.index(after: $0)...]) } ?? text }
}

/// The chain grammar's words: filters split at `|`, words at white space, both only outside double
/// quotes.
///
/// The grammar works on Unicode scalars, not `Character`s: a grapheme cluster can join a separator
/// to what follows it (a space or `|` followed by a combining mark is one `Character`, and so is
/// `\r\n`), and a chain must split the same way however its words are printed.
enum ChainTokenizer {
    /// The filters of `text`, each as its words.
    static func filters(_ text: String) throws(ChainSyntaxError) -> [[ChainToken]] {
        // Swift's `Double(_:)` reads a C string and stops at a NUL, so a value `1\0"` read as 1
        // and was printed back unquoted (FuzzChainGrammar found it): no NUL is ever meaningful here.
        guard !text.unicodeScalars.contains("\0") else { throw .nulCharacter }
        var filters: [[ChainToken]] = [[]]
        var current = String.UnicodeScalarView(), equals: String.Index?
        var inWord = false, quoted = false, escaped = false
        func endWord() {
            if inWord { filters[filters.count - 1].append(ChainToken(String(current), equals: equals)) }
            (current, equals, inWord) = (String.UnicodeScalarView(), nil, false)
        }
        for scalar in text.unicodeScalars {
            if quoted {
                if escaped {
                    // Only \" and \\ are escapes; any other backslash stays (text "a\nb" keeps its \n).
                    if scalar != "\"" && scalar != "\\" { current.append("\\") }
                    current.append(scalar)
                    escaped = false
                } else if scalar == "\\" {
                    escaped = true
                } else if scalar == "\"" {
                    quoted = false
                } else {
                    current.append(scalar)
                }
                continue
            }
            switch scalar {
            case "\"":
                quoted = true
                inWord = true
            case "|":
                endWord()
                filters.append([])
            case _ where scalar.properties.isWhitespace:
                endWord()
            case "=" where equals == nil:
                inWord = true
                current.append(scalar)
                equals = current.index(before: current.endIndex)
            default:
                inWord = true
                current.append(scalar)
            }
        }
        if quoted { throw .unterminatedQuote }
        if escaped { current.append("\\") }
        endWord()
        return filters
    }

    /// The words of one filter's text.
    static func tokens(_ text: String) throws(ChainSyntaxError) -> [ChainToken] {
        try filters(text).flatMap { $0 }
    }

    /// A line without its comment: from the first `#` outside quotes.
    static func strippingComment(_ line: Substring) -> Substring {
        var quoted = false, escaped = false
        let scalars = line.unicodeScalars
        for index in scalars.indices {
            let c = scalars[index]
            if quoted {
                if escaped { escaped = false } else if c == "\\" { escaped = true } else if c == "\"" { quoted = false }
            } else if c == "\"" {
                quoted = true
            } else if c == "#" {
                return Substring(scalars[..<index])
            }
        }
        return line
    }

    /// `value` as the grammar reads it back: quoted when it holds white space, `|`, `#`, `"`, `\`
    /// or `=` (or is empty).
    static func quoted(_ value: String) -> String {
        let special = { (c: Unicode.Scalar) in c.properties.isWhitespace || "|#\"\\=".unicodeScalars.contains(c) }
        guard value.isEmpty || value.unicodeScalars.contains(where: special) else { return value }
        var out = String.UnicodeScalarView()
        out.append("\"")
        for c in value.unicodeScalars {
            if c == "\"" || c == "\\" { out.append("\\") }
            out.append(c)
        }
        out.append("\"")
        return String(out)
    }
}
