import ArgumentParser
import MediaIO
import Pipeline

struct EstimateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "estimate",
        abstract: "Print the expected output size: duration × (video bitrate + audio bitrate) / 8.")

    @Argument(help: "Input file or URL.")
    var input: String

    @OptionGroup var job: JobOptions

    func run() throws {
        FFmpegLog.setLevel(.quiet)
        let config = try job.configuration(input: input, output: "estimate.mp4")
        let transcode: TranscodeJob
        do { transcode = try TranscodeJob(configuration: config) } catch { throw CommandFailure(error) }
        guard let estimate = SizeEstimate(job: transcode) else {
            throw CommandFailure("no estimate: the video is quality-based (CRF) or the duration is unknown; pass --video-bitrate or a preset",
                                 code: .usage)
        }
        print(estimate.text)
    }
}

struct PresetsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "presets", abstract: "List the export presets and what each sets.")

    func run() {
        for preset in ExportPreset.allCases {
            print(preset.rawValue.padding(toLength: 15, withPad: " ", startingAt: 0) + preset.summary)
        }
    }
}
