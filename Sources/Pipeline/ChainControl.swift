import Filters
import Synchronization

/// Changes a running job's chain (`run --control`, `PUT /chain`, or an embedding app): a change
/// is checked here, then applied by the filter stage at the next tick boundary, atomically (every
/// picture is filtered entirely by the old chain or entirely by the new one); `change` returns the
/// tick it took effect at.
public final class ChainControl: Sendable {
    /// A change as applied.
    public struct Applied: Sendable, Equatable, Codable {
        /// The first output tick (picture number) filtered by the new chain, and its output time.
        public var tick: Int
        public var seconds: Double
        /// The user's chain as it now runs.
        public var chain: String
    }

    /// Why a change was refused.
    public enum Refusal: Error, Sendable, CustomStringConvertible {
        /// The text does not parse; the error names the token.
        case badChain(ChainSyntaxError)
        /// The text names a file the change may not read (`files` of `change`): said the same
        /// whether or not the file exists, before it is touched.
        case fileNotAllowed(ChainSyntaxError)
        /// It would change the output's size (or does not fit the picture): the encoder and every
        /// player are set up for the size the run started with.
        case changesGeometry(String)
        /// The run has ended (or has not started filtering).
        case notRunning

        public var description: String {
            switch self {
            case let .badChain(error): "bad chain: \(error)"
            case let .fileNotAllowed(error): "\(error)"
            case let .changesGeometry(reason): reason
            case .notRunning: "the run has ended; there is no chain to change"
            }
        }
    }

    /// A checked change waiting for the filter stage.
    struct Pending {
        var chain: FilterChain
        var geometry: OutputGeometry
        var reply: @Sendable (Result<Applied, Refusal>) -> Void
    }

    private struct State {
        var chain: FilterChain
        var pending: [Pending] = []
        var history: [Applied] = []
        var ended = false
    }

    private let state: Mutex<State>
    private let plan: JobPlan

    init(plan: JobPlan) {
        self.plan = plan
        state = Mutex(State(chain: plan.userChain))
    }

    /// The user's chain as it runs now (without the orientation fix the plan adds).
    public var chain: FilterChain { state.withLock { $0.chain } }

    /// Every change applied so far, in order.
    public var history: [Applied] { state.withLock { $0.history } }

    /// Applies `text` — a whole chain, or parameter changes `[FILTER.]key=value …` — at the next
    /// tick boundary and returns when it has taken effect.
    ///
    /// `files` says which new files the text may make the run read (`overlay FILE`, `font=`,
    /// `track=`): none unless the caller says so — `.within(folder)`, or `.unrestricted` for an
    /// app's own text — since a change often comes from a client. The files the run's own chain
    /// reads may always be named again, as that chain writes them.
    public func change(_ text: String, files: ChainFileAccess = .none) async throws(Refusal) -> Applied {
        let (chain, geometry) = try check(text, files: files)
        let result: Result<Applied, Refusal> = await withCheckedContinuation { continuation in
            let accepted = state.withLock { state -> Bool in
                guard !state.ended else { return false }
                state.pending.append(Pending(chain: chain, geometry: geometry, reply: { continuation.resume(returning: $0) }))
                return true
            }
            if !accepted { continuation.resume(returning: .failure(.notRunning)) }
        }
        return try result.get()
    }

    /// The new chain and its geometry, or why not: it must parse, read only the files `files`
    /// allows, and keep the output's size.
    func check(_ text: String, files: ChainFileAccess) throws(Refusal) -> (FilterChain, OutputGeometry) {
        let chain: FilterChain
        do {
            chain = try self.chain.applying(text, files: files.keeping(filesOf: plan.userChain))
        } catch {
            if case .fileNotAllowed = error { throw .fileNotAllowed(error) }
            throw .badChain(error)
        }
        let geometry: OutputGeometry
        do {
            geometry = try plan.geometry(with: chain)
        } catch {
            throw .changesGeometry("the chain does not fit the \(plan.input.video.size) picture: \(error)")
        }
        guard geometry.chainOutputSize == plan.geometry.chainOutputSize else {
            throw .changesGeometry("the chain makes \(geometry.chainOutputSize) pictures; this run encodes \(plan.geometry.chainOutputSize) "
                                   + "(its encoder and its players are set up for that size): keep the size, e.g. end with scale \(plan.geometry.chainOutputSize)")
        }
        return (chain, geometry)
    }

    /// The next change, for the filter stage.
    func take() -> Pending? {
        state.withLock { state in state.pending.isEmpty ? nil : state.pending.removeFirst() }
    }

    /// The filter stage applied `pending` at `tick`.
    func applied(_ pending: Pending, tick: Int, seconds: Double) {
        let applied = Applied(tick: tick, seconds: seconds, chain: pending.chain.description)
        state.withLock {
            $0.chain = pending.chain
            $0.history.append(applied)
        }
        pending.reply(.success(applied))
    }

    /// The run is over: refuse what is waiting and whatever comes.
    func end() {
        let waiting = state.withLock { state -> [Pending] in
            state.ended = true
            defer { state.pending = [] }
            return state.pending
        }
        for pending in waiting { pending.reply(.failure(.notRunning)) }
    }
}
