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
              ("rtsp://admin:hunter2@camera.local:554/stream1", "rtsp://***@camera.local:554/stream1"),
              ("http://o.example/x.m3u8?access_token=S1&X-Goog-Signature=S2&X-Goog-Date=1&n=3",
               "http://o.example/x.m3u8?access_token=***&X-Goog-Signature=***&X-Goog-Date=***&n=3"),
              ("http://TOKEN123@o.example/live/x.m3u8", "http://***@o.example/live/x.m3u8"),
              ("https://c.example/a.ts?hdnts=exp=1~acl=/*~hmac=ab&api_key=K&jwt=a.b.c&sig=1&upload_token=u",
               "https://c.example/a.ts?hdnts=***&api_key=***&jwt=***&sig=***&upload_token=***"),
              ("srt://h:9000?streamid=#!::r=live/cam,m=publish&latency=1", "srt://h:9000?streamid=***&latency=1"),
              ("https://d.cloudfront.example/a.m3u8?Policy=P&Key-Pair-Id=K&Signature=S", "https://d.cloudfront.example/a.m3u8?Policy=***&Key-Pair-Id=***&Signature=***"),
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

    @Test("a whole message: every URL in it redacted, the words around kept")
    func messages() {
        let line = "segment 7 (http://o.example/s.ts?token=abc) skipped; reloading rtmp://h/live/KEY99 and http://u:p@h/x failed"
        #expect(line.redactingSecrets == "segment 7 (http://o.example/s.ts?token=***) skipped; reloading rtmp://h/live/*** and http://***@h/x failed")
    }

    @Test("known secrets are hidden wherever a message repeats them, without a URL around them")
    func known() {
        let found = KnownSecrets.register(secretsOf: "rtmp://0.0.0.0:1935/live/TOPSECRET-KEY-42")
        #expect(found == ["TOPSECRET-KEY-42"])
        #expect("Unexpected stream wrong, expecting TOPSECRET-KEY-42".redactingSecrets == "Unexpected stream wrong, expecting ***")
        KnownSecrets.register(secretsOf: "srt://h:1?passphrase=longpassphrase1&streamid=cam-abcdef")
        #expect("bad passphrase longpassphrase1 for cam-abcdef".redactingSecrets == "bad passphrase *** for ***")
        KnownSecrets.register("abc")  // too short to hide: it would hide ordinary words
        #expect("abc".redactingSecrets == "abc")
    }

    @Test("control characters from the network are escaped: no forged line, no terminal escape")
    func control() {
        let id = "cam\u{1B}[2J\u{1B}]0;owned\u{07}\nlivefilter: error: fake\u{202E}"
        let escaped = id.escapingControlCharacters
        #expect(!escaped.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || $0.value == 0x202E })
        #expect(escaped.hasPrefix("cam\\u{1B}[2J"))
        #expect("plain text, é and 漢字".escapingControlCharacters == "plain text, é and 漢字")
    }
}
