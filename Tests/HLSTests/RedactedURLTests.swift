import HLS
import Testing

@Suite("URLs in messages hide their secrets")
struct RedactedURLTests {
    @Test("an SRT passphrase, tokens and signatures in the query, a user's password, an RTMP stream key: hidden; the rest kept as written",
          arguments: [
              ("srt://0.0.0.0:9000?mode=listener&passphrase=correct-horse-battery&latency=200000",
               "srt://0.0.0.0:9000?mode=listener&passphrase=***&latency=200000"),
              ("https://cdn.example/live/index.m3u8?token=abc.def&Expires=99&Signature=zzz#t",
               "https://cdn.example/live/index.m3u8?token=***&Expires=99&Signature=***#t"),
              ("rtsp://admin:hunter2@camera.local:554/stream1", "rtsp://admin:***@camera.local:554/stream1"),
              ("https://s3.example/b/o.m3u8?X-Amz-Credential=AK%2F1&X-Amz-Signature=ff&keyframes=1",
               "https://s3.example/b/o.m3u8?X-Amz-Credential=***&X-Amz-Signature=***&keyframes=1"),
              ("rtmp://0.0.0.0:1935/live/KEY", "rtmp://0.0.0.0:1935/live/***"),
              ("rtmps://a.rtmp.youtube.com/live2/abcd-efgh-ijkl?x=1", "rtmps://a.rtmp.youtube.com/live2/***?x=1"),
              ("rtmp://127.0.0.1/app/instance/sk_live_123", "rtmp://127.0.0.1/app/instance/***"),
              ("rtmp://127.0.0.1:1935/live", "rtmp://127.0.0.1:1935/live"),
              ("/media/in put.mp4", "/media/in put.mp4"),
              ("http://host/a@b/index.m3u8?monkey=1", "http://host/a@b/index.m3u8?monkey=1"),
          ])
    func redacts(url: String, expected: String) {
        #expect(url.redactingSecrets == expected)
    }
}
