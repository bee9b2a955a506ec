import Filters
import LiveFilter
import MediaIO
import Pipeline
import Testing

/// The caption decisions of the plan, without media: kept or dropped, the rate the pacer fills,
/// what a master declares (the input's word, NONE when dropped), and the tick stage told the same.
struct CaptionPlanTests {
    @Test("keep by default, paced at the tick rate (--fps) or the source's nominal rate; drop declares NONE")
    func decisions() throws {
        let kept = try JobPlanTests.plan("mirror")
        #expect(kept.captions == CaptionPlan(keeps: true, outputRate: 30, declaration: .unknown))
        #expect(kept.tickSpec.captions == kept.captions)
        #expect(try JobPlanTests.plan("mirror") { $0.frameRate = Rational(25, 1) }.captions.outputRate == 25)
        let dropped = try JobPlanTests.plan("mirror") { $0.captions = .drop }
        #expect(dropped.captions == CaptionPlan(keeps: false, outputRate: 30, declaration: .none))
        #expect(dropped.tickSpec.captions.keeps == false)
    }

    @Test("a master says what the input told: its services, none, or nothing when unknown; drop wins", arguments: [
        (ClosedCaptionDeclaration.services(["CC1", "SERVICE1"]), CaptionPolicy.keep, ClosedCaptionDeclaration.services(["CC1", "SERVICE1"])),
        (.none, .keep, .none), (.unknown, .keep, .unknown), (.services(["CC1"]), .drop, .none), (.unknown, .drop, .none),
    ])
    func declaration(told: ClosedCaptionDeclaration, policy: CaptionPolicy, declared: ClosedCaptionDeclaration) throws {
        var facts = JobPlanTests.facts()
        facts.captions = told
        let plan = try JobPlanTests.plan("", output: "out/master.m3u8", facts: facts) {
            $0.captions = policy
            $0.renditions = [Rendition(size: FrameSize(width: 640, height: 360), bitRate: 800_000), Rendition(size: FrameSize(width: 320, height: 180), bitRate: 300_000)]
        }
        guard case let .hls(hls) = plan.outputSpec.kind else { Issue.record("not HLS"); return }
        #expect(hls.masterPath != nil && hls.closedCaptions == declared)
    }
}
