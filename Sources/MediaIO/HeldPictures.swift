/// Which of the pictures a decoder holds for reordering may come out before more input arrives.
///
/// An H.264 decoder holds up to `num_reorder_frames` decoded pictures, because a picture sent
/// later may be shown earlier. A held picture can come out early when every display slot before it
/// is filled: the pictures sent so far, in display order, run on from the last one output without
/// a gap (one frame interval, the smallest step seen between pictures output). Then no picture
/// still to come can go before it. A live input's part ends mid-GOP: this is what lets its
/// pictures out at once instead of a part later.
public struct HeldPictures: Sendable {
    public init() {}

    /// Timestamps of the pictures sent to the decoder and not yet output, ascending.
    public private(set) var awaiting: [Int64] = []
    /// Pictures left out before the decoder (overload): their slots are filled, nothing comes.
    private var leftOutSlots: [Int64] = []
    public private(set) var lastOutput: Int64?
    /// The smallest step between consecutive pictures output recently: the frame interval.
    private var steps: [Int64] = []
    /// The newest picture output was given up early (`Decoder.releaseHeldPicture`).
    private var lastOutputReleased = false

    /// A picture went to the decoder.
    public mutating func sent(_ pts: Int64) { Self.insert(pts, into: &awaiting, after: lastOutput) }

    /// A picture was left out before the decoder: its slot will stay empty.
    public mutating func leftOut(_ pts: Int64) { Self.insert(pts, into: &leftOutSlots, after: lastOutput) }

    private static func insert(_ pts: Int64, into list: inout [Int64], after lastOutput: Int64?) {
        if let lastOutput, pts <= lastOutput { return }
        let at = list.lastIndex { $0 < pts }.map { $0 + 1 } ?? 0
        if at < list.count, list[at] == pts { return }
        list.insert(pts, at: at)
        // A stream that never outputs (all skipped) must not grow this without bound.
        if list.count > 64 { list.removeFirst(list.count - 64) }
    }

    /// The decoder output a picture, given up early (`released`) or of its own accord.
    public mutating func output(_ pts: Int64, released: Bool = false) {
        if let lastOutput, pts > lastOutput {
            steps.append(pts - lastOutput)
            if steps.count > 16 { steps.removeFirst() }
        }
        lastOutput = max(lastOutput ?? pts, pts)
        lastOutputReleased = released
        awaiting.removeAll { $0 <= pts }
        leftOutSlots.removeAll { $0 <= pts }
    }

    /// The decoder was drained and flushed: nothing is held.
    public mutating func flushed() {
        awaiting = []
        leftOutSlots = []
        lastOutputReleased = false
    }

    /// How many of the held pictures, lowest first, may come out now.
    public var releasable: Int {
        guard let lastOutput, let step = steps.min(), step > 0 else { return 0 }
        var previous = lastOutput, count = 0
        var a = awaiting.startIndex, l = leftOutSlots.startIndex
        while a < awaiting.endIndex {
            let isHeld = l == leftOutSlots.endIndex || awaiting[a] < leftOutSlots[l]
            let pts = isHeld ? awaiting[a] : leftOutSlots[l]
            // Within half a frame interval more than one: no picture fits in between.
            guard pts > previous, pts - previous <= step + step / 2 else { break }
            if isHeld { count += 1; a += 1 } else { l += 1 }
            previous = pts
        }
        return count
    }

    /// FFmpeg's H.264 decoder judges a picture's order against the last one it output of its own
    /// accord; a picture given up early does not move that mark. When it holds nothing and the last
    /// picture out was given up early, an IDR picture (its order count back at 0) would be taken
    /// for a late one and dropped: the decoder is flushed first (it holds nothing an IDR needs).
    public var needsFlushBeforeIDR: Bool { awaiting.isEmpty && lastOutputReleased }
}
