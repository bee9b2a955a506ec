import ArgumentParser
import Filters
import Foundation

@main
struct LiveFilterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "livefilter",
        abstract: "Filter video files and HLS streams through a Swift filter chain and re-encode them.",
        discussion: """
            Exit codes: 0 ok; 1 processing failed; 2 usage error; 3 bad filter chain; 4 input missing or \
            unreadable; 5 input is not a media file; 6 no video stream; 7 output folder missing or not \
            writable or disk full; 8 output exists (use --overwrite); 9 live input stalled; 10 input refused by a limit; \
            11 no frame decodes; 12 input differs from the plan's; 13 parts missing at join; 14 a cluster task failed; \
            15 built for AVX2 and this CPU has none; 130 interrupted (SIGINT); 143 terminated (SIGTERM).
            """,
        subcommands: [RunCommand.self, SnapshotCommand.self, ProbeCommand.self, FiltersCommand.self, EstimateCommand.self, PresetsCommand.self,
                      ServeCommand.self, LintCommand.self, PlanCommand.self, JoinCommand.self])

    /// Parses, runs, and turns every failure into one `livefilter: error:` line and a documented code.
    static func main() async {
        // Before any kernel runs: an AVX2 build on an older CPU gets a sentence, not SIGILL.
        if let problem = KernelBuild.checkCPU() {
            Terminal.error(problem)
            Foundation.exit(LiveFilterExit.unsupportedCPU.rawValue)
        }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let code as ExitCode {
            Foundation.exit(code.rawValue)
        } catch let failure as CommandFailure {
            Terminal.error(failure.message)
            Foundation.exit(failure.code.rawValue)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                // --help and --version
                print(fullMessage(for: error))
                Foundation.exit(0)
            }
            let message = message(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            let text = message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message
            Terminal.error(text + " (see 'livefilter help' for the options)")
            Foundation.exit(LiveFilterExit.usage.rawValue)
        }
    }
}
