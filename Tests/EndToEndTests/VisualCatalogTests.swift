import Foundation
import Testing

extension EndToEnd {
    /// `livefilter filters` (the chain grammar's own table) and `livefilter probe`.
    @Suite("Visual: filters and probe")
    struct VisualCatalog {
        /// The filter names the chain parser itself knows, from its "unknown filter" error
        /// ("…; valid filters: blur, rotate, …"). The chain is parsed before the input is opened.
        func parserFilterNames() async throws -> [String] {
            let result = try await LiveFilter.run(["run", "/nonexistent.mp4", "-o", "/tmp/x.mp4", "--chain", "nosuchfilter"])
            let line = try #require(result.stderrLines.first)
            let list = try #require(line.range(of: "valid filters: "), "no list in: \(line)")
            return line[list.upperBound...].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }

        /// 100 rather than 100.0; no grouping separators.
        func plain(_ value: Double) -> String { value == value.rounded() ? String(Int(value)) : String(value) }

        func filtersJSON() async throws -> [[String: Any]] {
            let result = try await LiveFilter.run(["filters", "--json"])
            try LiveFilter.requireSuccess(result)
            let json = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
            #expect(json["schema"] as? String == "livefilter.filters/1")
            return try #require(json["filters"] as? [[String: Any]])
        }

        @Test("filters lists every filter the parser knows, each parameter with its range or choices and default")
        func filtersText() async throws {
            let names = try await parserFilterNames()
            #expect(names.count >= 5 && names.contains("blur") && names.contains("crop"), "\(names)")
            let result = try await LiveFilter.run(["filters"])
            try LiveFilter.requireSuccess(result)
            let text = result.stdoutText
            let blocks = text.components(separatedBy: "\n\n")
            let filters = try await filtersJSON()
            #expect(filters.compactMap { $0["name"] as? String } == names, "JSON lists the parser's filters in its order")
            for filter in filters {
                let name = try #require(filter["name"] as? String)
                let block = try #require(blocks.first { $0.hasPrefix(name + " — ") }, "no block for \(name) in:\n\(text)")
                for parameter in try #require(filter["parameters"] as? [[String: Any]]) {
                    let key = try #require(parameter["key"] as? String)
                    #expect(block.contains("\(key)="), "\(name): \(key) not listed")
                    switch parameter["kind"] as? String {
                    case "number", "integer":
                        let low = try #require(parameter["minimum"] as? Double), high = try #require(parameter["maximum"] as? Double)
                        let range = "\(plain(low))…\(plain(high))"
                        #expect(block.contains(range), "\(name) \(key): range \(range) not printed in\n\(block)")
                    case "choice":
                        let choices = try #require(parameter["choices"] as? [String])
                        #expect(block.contains(choices.joined(separator: "|")), "\(name) \(key): choices \(choices)")
                    default:
                        #expect(parameter["expected"] is String)
                    }
                    if let value = parameter["default"] as? String {
                        #expect(block.contains("default \(value)"), "\(name) \(key): default \(value)")
                    }
                }
            }
        }

        @Test("every example the listing shows is a chain the parser accepts")
        func examplesParse() async throws {
            // The files examples name (a logo, a track) exist where the test puts them.
            let sandbox = try Sandbox("catalog-examples")
            defer { sandbox.remove() }
            let logo = sandbox.file("logo.png"), plates = sandbox.file("plates.csv")
            try await ffmpeg(["-f", "lavfi", "-i", "color=c=red@0.5:s=64x32,format=rgba", "-frames:v", "1", logo.path])
            try "time,x,y,w,h\n0,10,10,40,20\n".write(to: plates, atomically: true, encoding: .utf8)
            for filter in try await filtersJSON() {
                let examples = try #require(filter["examples"] as? [String])
                #expect(!examples.isEmpty, "\(filter["name"] ?? "?") shows no example")
                for listed in examples {
                    let example = listed.replacingOccurrences(of: "logo.png", with: logo.path)
                        .replacingOccurrences(of: "plates.csv", with: plates.path)
                    // A good chain gets past parsing to the missing input (4); a bad one stops at 3.
                    let result = try await LiveFilter.run(["run", "/nonexistent.mp4", "-o", "/tmp/x.mp4", "--chain", example])
                    #expect(result.status == ExitCode.inputUnreadable.rawValue, "'\(example)': \(result.summary)")
                }
            }
        }

        @Test("every listed range is the parser's: its ends are accepted, the nearest values past them refused in the listing's own words")
        func rangesMatchParser() async throws {
            let result = try await LiveFilter.run(["filters", "--json"])
            try LiveFilter.requireSuccess(result)
            let json = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
            // The options every filter takes are tried on invert.
            var listed = try #require(json["filters"] as? [[String: Any]]).map { ($0["name"] as? String ?? "", $0["parameters"] as? [[String: Any]] ?? []) }
            listed.append(("invert", try #require(json["timeline"] as? [[String: Any]])))
            var probed = 0
            for (name, parameters) in listed {
                for parameter in parameters where ["number", "integer"].contains(parameter["kind"] as? String) {
                    let key = try #require(parameter["key"] as? String), expected = try #require(parameter["expected"] as? String)
                    let low = try #require(parameter["minimum"] as? Double), high = try #require(parameter["maximum"] as? Double)
                    let integer = parameter["kind"] as? String == "integer"
                    let past = integer ? [plain(low - 1), plain(high + 1)] : [String(low.nextDown), String(high.nextUp)]
                    for value in [plain(low), plain(high)] + past {
                        let chain = "\(name) \(key)=\(value)"
                        let run = try await LiveFilter.run(["run", "/nonexistent.mp4", "-o", "/tmp/x.mp4", "--chain", chain])
                        // The value is read before the filter asks for what it lacks (blur's sigma, a track for hold).
                        let refused = run.stderrText.contains("bad value '\(value)' for \(key)")
                        if past.contains(value) {
                            LiveFilter.expectError(run, .badChain, mentioning: expected)
                            #expect(refused, "\(chain): \(run.summary)")
                        } else {
                            #expect(!refused, "\(chain): \(run.summary)")
                        }
                    }
                    probed += 1
                }
            }
            #expect(probed >= 20, "only \(probed) numeric parameters listed")
        }

        func probeJSON(_ sample: Sample) async throws -> [String: Any] {
            let result = try await LiveFilter.run(["probe", sample.url.path, "--json"])
            try LiveFilter.requireSuccess(result)
            return try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        }

        @Test("probe --json: the rotated phone clip is stored 640x360, tagged 90° clockwise, shown 360x640")
        func probeRotated() async throws {
            let json = try await probeJSON(.portraitRotated)
            let video = try #require(json["video"] as? [String: Any])
            #expect(video["width"] as? Int == 640 && video["height"] as? Int == 360)
            #expect(video["displayWidth"] as? Int == 360 && video["displayHeight"] as? Int == 640)
            let rotation = try #require(video["rotation"] as? Double)
            let reference = try await FFprobe.probe(Sample.portraitRotated.url)
            // ffprobe says 90 for this clip's display matrix; ours is the clockwise turn to display it.
            #expect(abs(rotation) == 90 && reference.video?.rotation == 90, "rotation \(rotation), ffprobe \(String(describing: reference.video?.rotation))")
            let text = try await LiveFilter.run(["probe", Sample.portraitRotated.url.path])
            #expect(text.stdoutText.contains("rotation") && text.stdoutText.contains("360x640"), "\(text.stdoutText)")
        }

        @Test("probe --json: fields and values for the no-audio and landscape clips")
        func probeFields() async throws {
            let silent = try await probeJSON(.noAudio)
            #expect(silent["audio"] == nil, "no audio stream: \(silent)")
            #expect(silent["schemaVersion"] as? Int == 1)
            let video = try #require(silent["video"] as? [String: Any])
            #expect(video["codec"] as? String == "h264")
            #expect(video["width"] as? Int == 480 && video["height"] as? Int == 360)
            #expect(video["frameRate"] as? String == "25" || video["frameRate"] as? String == "25/1", "\(String(describing: video["frameRate"]))")
            #expect(video["rotation"] as? Double == 0)
            #expect(video["pixelFormat"] as? String == "yuv420p")
            #expect(abs((silent["duration"] as? Double ?? 0) - 3) < 0.05)
            #expect(silent["live"] as? Bool == false)
            let text = try await LiveFilter.run(["probe", Sample.noAudio.url.path])
            #expect(text.stdoutText.contains("audio     none"), "\(text.stdoutText)")

            let landscape = try await probeJSON(.landscape)
            let audio = try #require(landscape["audio"] as? [String: Any])
            #expect(audio["codec"] as? String == "aac" && audio["sampleRate"] as? Int == 48000 && audio["channels"] as? Int == 2)
            let reference = try await FFprobe.probe(Sample.landscape.url)
            #expect(abs((landscape["duration"] as? Double ?? 0) - (reference.format?.durationSeconds ?? -1)) < 0.01)
            for key in ["input", "format", "duration", "bitRate", "live", "video", "audio", "schemaVersion"] {
                #expect(landscape[key] != nil, "probe --json has \(key)")
            }
            LiveFilter.expectError(try await LiveFilter.run(["probe", "/nonexistent.mp4", "--json"]), .inputUnreadable)
        }
    }
}
