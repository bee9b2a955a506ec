import ArgumentParser

@main
struct LiveFilterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "livefilter", abstract: "Filter video streams.")
}
