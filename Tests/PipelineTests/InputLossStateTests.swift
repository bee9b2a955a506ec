import Pipeline
import Testing

/// A channel's input-loss states, held by one type: live → lost → resuming → live.
struct InputLossStateTests {
    @Test func aLossGoesLostThenResumingThenLive() {
        let state = InputLossState()
        #expect(state.phase == .live && !state.showsLossPicture && state.losses.isEmpty)
        state.newPictureShown()
        #expect(state.phase == .live, "a picture while live changes nothing")
        #expect(state.ended() == 0 && state.phase == .live, "no loss to end")

        state.began(outputTime: 12.5)
        #expect(state.phase == .lost && state.isLost && state.showsLossPicture)
        #expect(state.losses.count == 1 && state.losses[0].outputTime == 12.5 && state.losses[0].seconds == nil)

        state.newPictureShown()
        #expect(state.phase == .lost, "no picture ends a loss; a frame's arrival does")
        let seconds = state.ended()
        #expect(seconds >= 0 && state.losses[0].seconds == seconds)
        // Back, but the ticks of the resume delay still show the loss's picture.
        #expect(state.phase == .resuming && !state.isLost && state.showsLossPicture)
        #expect(state.ended() == 0 && state.phase == .resuming, "a second end changes nothing")

        state.newPictureShown()
        #expect(state.phase == .live && !state.showsLossPicture)
        state.began(outputTime: 30)
        #expect(state.losses.count == 2 && state.isLost)
    }
}
