import LiveFilter
import Testing

/// `import LiveFilter` is the library's one import (docs/ARCHITECTURE.md's module table): this file
/// imports nothing else of the package, so it compiles only while LiveFilter re-exports each module.
struct LibraryExportsTests {
    @Test func shardedJobsComeWithTheOneImport() {
        let count: ShardCount = .duration(60)
        #expect(count != .count(1))
        _ = ShardPlanner.plan(configuration:arguments:shards:workDirectory:warmup:interrupt:)
        _ = ShardRunner.run(plan:task:configuration:progress:)
        _ = ShardJoiner.join(plan:keepParts:)
    }

    @Test func filtersMediaAndPlaylistsComeWithTheOneImport() {
        #expect(FrameSize(width: 2, height: 2).width == 2)       // Filters
        #expect(YUVMatrix.bt709.kr == 0.2126)                    // Filters
        #expect(HLSNumber.decimal(4, places: 3) == "4.000")      // HLS
        _ = JobPlan.self                                         // Pipeline
        _ = DisplayMatrix.self                                   // MediaIO
    }
}
