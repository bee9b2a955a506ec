/// One numeric parameter of a filter in a chain, with its value and range: what a control surface
/// (the player page's sliders) needs to offer it.
public struct ChainParameter: Sendable, Equatable, Codable {
    /// 1-based position of the filter in the chain.
    public var position: Int
    public var filter: String
    public var key: String
    public var value: Double
    public var minimum: Double
    public var maximum: Double
    public var integer: Bool
}

extension FilterChain {
    /// This chain changed by `text`: either a whole new chain, or parameter changes
    /// `[FILTER.]key=value …` where FILTER is a filter's name or 1-based position (without it, the
    /// first filter that has the key). `blur.sigma=12`, `2.angle=180`, `sigma=8 size=24`.
    ///
    /// `files` says which files the text may make it read, as in `FilterChain(parsing:files:)`. A
    /// filter the text changes keeps the files it reads unless the text names others; a filter it
    /// does not change is kept as it is, its files not read again.
    public func applying(_ text: String, files: ChainFileAccess = .unrestricted) throws(ChainSyntaxError) -> FilterChain {
        let filterTexts = try ChainTokenizer.filters(text)
        guard filterTexts.count == 1, let first = filterTexts[0].first, first.equals != nil else {
            return try FilterChain(parsing: text, files: files)
        }
        // The running filters' arguments, as their text writes them: nothing is read or admitted here.
        var arguments: [FilterCatalog.Arguments] = []
        for filter in filters {
            arguments.append(try FilterCatalog.arguments(try ChainTokenizer.tokens(filter.description), files: .unrestricted))
        }
        var changed = Set<Int>()
        for token in filterTexts[0] {
            guard let target = token.key else {
                throw .unexpectedValue(filter: "chain", value: token.text, expected: "[FILTER.]key=value (FILTER: a name or a position)")
            }
            let value = ChainTokenizer.quoted(token.value)
            let parts = target.split(separator: ".", maxSplits: 1)
            let key = String(parts.last ?? "")
            let index: Int
            if parts.count == 2 {
                let which = String(parts[0])
                if let position = Int(which) {
                    guard position >= 1, position <= arguments.count else {
                        throw .unexpectedValue(filter: "chain", value: token.text, expected: "a position in 1…\(arguments.count)")
                    }
                    index = position - 1
                } else {
                    guard let found = arguments.firstIndex(where: { $0.definition.name == which }) else {
                        throw .unknownFilter(name: which, validNames: arguments.map(\.definition.name))
                    }
                    index = found
                }
            } else {
                guard let found = arguments.firstIndex(where: { a in a.definition.parameters.contains { $0.key == key } }) else {
                    let keys = arguments.flatMap { a in a.definition.parameters.map { "\(a.definition.name).\($0.key)" } }
                    throw .unknownKey(filter: "chain", key: key, validKeys: keys)
                }
                index = found
            }
            var spelled = arguments[index].spelled.filter { !$0.hasPrefix(key + "=") }
            spelled.append("\(key)=\(value)")
            let tokens = try ChainTokenizer.tokens(([arguments[index].definition.name] + spelled).joined(separator: " "))
            arguments[index] = try FilterCatalog.arguments(tokens, files: .unrestricted)
            changed.insert(index)
        }
        // Each changed filter is built again under `files`, keeping the files it read.
        var chain = self
        for index in changed.sorted() {
            let tokens = try ChainTokenizer.tokens(([arguments[index].definition.name] + arguments[index].spelled).joined(separator: " "))
            chain.filters[index] = try FilterCatalog.parseFilter(tokens, files: files.keeping(filesOf: FilterChain([filters[index]])))
        }
        return chain
    }

    /// Every numeric parameter of every filter that has a plain value (not keyframes), with the
    /// catalog's range.
    public var numericParameters: [ChainParameter] {
        var out: [ChainParameter] = []
        for (index, filter) in filters.enumerated() {
            guard let tokens = try? ChainTokenizer.tokens(filter.description), !tokens.isEmpty,
                  let arguments = try? FilterCatalog.arguments(tokens, files: .unrestricted) else { continue }
            for parameter in arguments.definition.parameters {
                let range: (Double, Double, Bool)
                switch parameter.kind {
                case let .number(r): range = (r.lowerBound, r.upperBound, false)
                case let .integer(r): range = (Double(r.lowerBound), Double(r.upperBound), true)
                default: continue
                }
                guard arguments.animated[parameter.key] == nil else { continue }
                let value: Double?
                switch arguments.values[parameter.key] {
                case let .number(v)?: value = v
                case let .integer(v)?: value = Double(v)
                default: value = parameter.defaultValue.flatMap(Double.init)
                }
                guard let value else { continue }
                out.append(ChainParameter(position: index + 1, filter: arguments.definition.name, key: parameter.key, value: value,
                                          minimum: range.0, maximum: range.1, integer: range.2))
            }
        }
        return out
    }
}
