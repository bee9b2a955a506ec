/// One word of a filter: `value` or `key=value`, quotes removed. `equals` is the first `=` outside
/// quotes, so `text "a=b"` is a value and `text="a=b"` a key and its value.
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

    var key: String? { equals.map { String(text[..<$0]) } }
    var value: String { equals.map { String(text[text.index(after: $0)...]) } ?? text }
}

/// The chain grammar's words: filters split at `|`, words at white space, both only outside double
/// quotes.
enum ChainTokenizer {
    /// The filters of `text`, each as its words.
    static func filters(_ text: String) throws(ChainSyntaxError) -> [[ChainToken]] {
        var filters: [[ChainToken]] = [[]]
        var current = "", equals: String.Index?, inWord = false, quoted = false, escaped = false
        func endWord() {
            if inWord { filters[filters.count - 1].append(ChainToken(current, equals: equals)) }
            (current, equals, inWord) = ("", nil, false)
        }
        for character in text {
            if quoted {
                if escaped {
                    // Only \" and \\ are escapes; any other backslash stays (text "a\nb" keeps its \n).
                    if character != "\"" && character != "\\" { current.append("\\") }
                    current.append(character)
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    quoted = false
                } else {
                    current.append(character)
                }
                continue
            }
            switch character {
            case "\"":
                quoted = true
                inWord = true
            case "|":
                endWord()
                filters.append([])
            case _ where character.isWhitespace:
                endWord()
            case "=" where equals == nil:
                inWord = true
                current.append(character)
                equals = current.index(before: current.endIndex)
            default:
                inWord = true
                current.append(character)
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
        for index in line.indices {
            let c = line[index]
            if quoted {
                if escaped { escaped = false } else if c == "\\" { escaped = true } else if c == "\"" { quoted = false }
            } else if c == "\"" {
                quoted = true
            } else if c == "#" {
                return line[..<index]
            }
        }
        return line
    }

    /// `value` as the grammar reads it back: quoted when it holds white space, `|`, `#`, `"`, `\`
    /// or `=` (or is empty).
    static func quoted(_ value: String) -> String {
        guard value.isEmpty || value.contains(where: { $0.isWhitespace || "|#\"\\=".contains($0) }) else { return value }
        var out = "\""
        for c in value {
            if c == "\"" || c == "\\" { out.append("\\") }
            out.append(c)
        }
        return out + "\""
    }
}
