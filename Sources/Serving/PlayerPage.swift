import Foundation

/// The player page: HLS in a `<video>` element, played by hls.js when the server has it (at
/// `/hls.js`: `PlayerScript`) in its low-latency mode, else natively (Safari, Chromium), with
/// playback statistics a headless browser check reads from the title and `window.livefilterStats`
/// (with hls.js also its version, the player's latency behind the live edge, the playing
/// program date, its error events and the stalls). During `run --serve`
/// it also draws a live chart beside the video from `/status` once a second: output frames per
/// second, end-to-end latency (and the player's, with hls.js) and dropped plus repeated ticks over the last two minutes. With
/// `run --control` on the same port it has the chain's text field and a slider per numeric
/// parameter; a change is sent to `PUT /chain` and shows the tick it took effect at.
enum PlayerPage {
    static func html(playlist: String, liveStatus: Bool, chainControl: Bool = false, hlsjs: Bool = false) -> String {
        let src = playlist.replacingOccurrences(of: "\"", with: "%22").replacingOccurrences(of: "<", with: "%3C")
        return """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <title>livefilter</title>
        \(hlsjs ? "<script src=\"/hls.js\"></script>" : "")
        <style>
          body { background: #111; color: #ddd; font: 14px system-ui, sans-serif; margin: 2em; }
          main { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
          video { max-width: 100%; background: #000; }
          #stats, #legend { font-family: ui-monospace, monospace; margin-top: 1em; }
          #chart { background: #1b1b1b; border: 1px solid #333; }
          .fps { color: #4fc3f7; } .latency { color: #ffb74d; } .player { color: #ba68c8; } .dropped { color: #ef5350; }
          #control { margin-top: 1.5em; max-width: 640px; }
          #chainText { width: 100%; font: 13px ui-monospace, monospace; background: #1b1b1b; color: #ddd; border: 1px solid #444; padding: .4em; }
          #sliders label { display: grid; grid-template-columns: 10em 1fr 5em; gap: .6em; align-items: center; margin: .3em 0; font-family: ui-monospace, monospace; }
          #chainReply { font-family: ui-monospace, monospace; margin-top: .5em; color: #9ccc65; }
          #chainReply.error { color: #ef5350; }
        </style>
        </head>
        <body>
        <h1>livefilter</h1>
        <main>
        <div>
        <video id="v" src="\(src)" controls autoplay muted playsinline></video>
        <div id="stats">loading \(src)…</div>
        </div>
        <div id="panel" hidden>
        <canvas id="chart" width="480" height="270"></canvas>
        <div id="legend"><span class="fps">■ fps</span> · <span class="latency">■ latency s</span> · <span class="player">■ player latency s</span> · <span class="dropped">■ dropped+repeated ticks/s</span></div>
        <div id="now"></div>
        </div>
        </main>
        <section id="control" hidden>
        <h2>Chain</h2>
        <form id="chainForm"><input id="chainText" autocomplete="off" spellcheck="false"> <button>Apply</button></form>
        <div id="token" hidden>token <input id="tokenText" type="password" autocomplete="off"></div>
        <div id="sliders"></div>
        <div id="chainReply"></div>
        </section>
        <script>
          const v = document.getElementById('v');
          const out = document.getElementById('stats');
          window.livefilterStats = { frames: 0, currentTime: 0, error: null, retries: 0, chartSamples: 0, status: null,
                                     hlsjs: null, latency: null, playingDate: null, dateRanges: {}, errors: 0, fatalErrors: 0, errorLog: [], stalls: 0, stallLog: [] };
          const stats = window.livefilterStats;
          let hls = null, played = false;
          // The playlist may not exist yet (run --serve): retry every 2 s for a minute.
          function retry(reload) {
            document.title = 'livefilter error';
            out.textContent = 'error: ' + stats.error;
            if (stats.retries++ < 30) setTimeout(reload, 2000);
          }
          v.addEventListener('error', () => {
            if (hls) return;  // hls.js reports its own errors (below) and owns the element's source
            stats.error = v.error ? v.error.code + ' ' + v.error.message : 'error';
            retry(() => { v.load(); v.play().catch(() => {}); });
          });
          v.addEventListener('playing', () => { stats.error = null; played = true; });
          // A stall: the element waits for data after playback began.
          v.addEventListener('waiting', () => {
            if (!played) return;
            stats.stalls++;
            stats.stallLog.push({ currentTime: v.currentTime, t: Date.now() });
            if (stats.stallLog.length > 50) stats.stallLog.shift();
          });
          if (window.Hls && Hls.isSupported()) {
            // Low-Latency HLS: blocking playlist reloads, parts, the preload hint (hls.js 1.x).
            const src = v.getAttribute('src');
            v.removeAttribute('src');
            stats.hlsjs = Hls.version;
            // maxLiveSyncPlaybackRate: play up to 1.5x while behind the target latency (PART-HOLD-BACK),
            // else the time start-up took stays as latency (hls.js's default, 1, never catches up).
            // liveSyncOnStallIncrease: each stall raises that target by 0.25 s, not hls.js's 1 s: the
            // first part or two at start-up often stall once or twice, and would cost a second or two
            // for the whole session.
            hls = new Hls({ lowLatencyMode: true, maxLiveSyncPlaybackRate: 1.5, liveSyncOnStallIncrease: 0.25 });
            hls.on(Hls.Events.ERROR, (event, data) => {
              stats.errors++;
              if (data.fatal) stats.fatalErrors++;
              stats.errorLog.push({ type: data.type, details: data.details, fatal: !!data.fatal, t: Date.now() });
              if (stats.errorLog.length > 50) stats.errorLog.shift();
              if (!data.fatal) return;
              stats.error = 'hls.js ' + data.type + ' ' + data.details;
              if (data.type === Hls.ErrorTypes.MEDIA_ERROR) { hls.recoverMediaError(); return; }
              retry(() => { hls.loadSource(src); hls.startLoad(); });
            });
            // The playlist's EXT-X-DATERANGEs as hls.js reads them (ad breaks, interstitials): the
            // page lists them and a browser check compares them with the playlist's.
            hls.on(Hls.Events.LEVEL_LOADED, (event, data) => {
              const ranges = (data.details && data.details.dateRanges) || {};
              for (const id of Object.keys(ranges)) {
                const r = ranges[id], a = r.attr || {};
                stats.dateRanges[id] = { id: r.id, class: r.class || null, valid: !!r.isValid,
                  startDate: r.startDate ? r.startDate.toISOString() : null, startTime: Number.isFinite(r.startTime) ? r.startTime : null,
                  duration: r.duration, plannedDuration: r.plannedDuration,
                  scte35Out: a['SCTE35-OUT'] || null, scte35In: a['SCTE35-IN'] || null, scte35Cmd: a['SCTE35-CMD'] || null };
              }
            });
            hls.attachMedia(v);
            hls.loadSource(src);
          }
          function tick() {
            const q = v.getVideoPlaybackQuality ? v.getVideoPlaybackQuality() : null;
            const frames = q ? q.totalVideoFrames : (v.webkitDecodedFrameCount || 0);
            window.livefilterStats.frames = frames;
            window.livefilterStats.currentTime = v.currentTime;
            if (hls) {
              stats.latency = Number.isFinite(hls.latency) ? hls.latency : null;
              const date = hls.playingDate;
              stats.playingDate = date ? date.getTime() : null;
            }
            out.textContent = 'frames ' + frames + ' · time ' + v.currentTime.toFixed(2) + ' s · ' + v.videoWidth + 'x' + v.videoHeight +
              (hls ? ' · hls.js ' + stats.hlsjs + ' · latency ' + (stats.latency == null ? '–' : stats.latency.toFixed(2) + ' s') : ' · native HLS') +
              (Object.keys(stats.dateRanges).length ? ' · date ranges ' + Object.keys(stats.dateRanges).join(', ') : '');
            document.title = 'frames=' + frames + ' time=' + v.currentTime.toFixed(2);
            requestAnimationFrame(tick);
          }
          v.play().catch(() => {});
          tick();

          // The live chart: one sample a second from /status (livefilter.status/1).
          const live = \(liveStatus ? "true" : "false");
          const samples = [];
          let previous = null;
          function draw() {
            const c = document.getElementById('chart'), g = c.getContext('2d');
            const W = c.width, H = c.height, left = 34, right = 40, pad = 20;
            // The window grows to two minutes: early on the few samples still fill the chart.
            const span = Math.min(120, Math.max(30, samples.length));
            g.fillStyle = '#1b1b1b'; g.fillRect(0, 0, W, H);
            g.strokeStyle = '#333'; g.lineWidth = 1;
            for (let i = 0; i <= 4; i++) { const y = pad + (H - 2 * pad) * i / 4; g.beginPath(); g.moveTo(left, y); g.lineTo(W - right, y); g.stroke(); }
            // Two scales: frames per second (and bad ticks per second) on the left, latency in seconds on the right.
            const fpsTop = Math.ceil(Math.max(30, ...samples.map(s => Math.max(s.fps, s.dropped))) * 1.1);
            const latencyTop = Math.ceil(Math.max(4, ...samples.map(s => Math.max(s.latency, s.player || 0))) * 1.1);
            g.font = '11px monospace';
            g.fillStyle = '#4fc3f7'; g.fillText(String(fpsTop), 4, pad + 4); g.fillText('fps', 4, pad + 16);
            g.fillStyle = '#ffb74d'; g.fillText(latencyTop + ' s', W - right + 4, pad + 4);
            g.fillStyle = '#888'; g.fillText('0', 4, H - pad + 4); g.fillText('last ' + span + ' s', W - right - 70, H - 6);
            const series = [['fps', '#4fc3f7', fpsTop], ['latency', '#ffb74d', latencyTop], ['player', '#ba68c8', latencyTop], ['dropped', '#ef5350', fpsTop]];
            for (const [key, color, top] of series) {
              g.strokeStyle = color; g.lineWidth = 2.5; g.beginPath();
              // A sample without the value (the player's latency before hls.js knows it, or native HLS) breaks the line.
              let drawing = false;
              samples.forEach((s, i) => {
                if (s[key] == null) { drawing = false; return; }
                const x = W - right - (samples.length - 1 - i) * (W - right - left) / span;
                const y = H - pad - Math.min(1, s[key] / top) * (H - 2 * pad);
                if (!drawing) g.moveTo(x, y); else g.lineTo(x, y);
                drawing = true;
              });
              g.stroke();
            }
          }
          async function poll() {
            try {
              const r = await fetch('/status', { cache: 'no-store' });
              const s = await r.json();
              window.livefilterStats.status = s;
              const now = performance.now() / 1000;
              if (previous) {
                const dt = Math.max(0.001, now - previous.t);
                samples.push({
                  fps: Math.max(0, (s.framesOut - previous.framesOut) / dt),
                  latency: s.latencySeconds || 0,
                  player: stats.latency,
                  dropped: Math.max(0, (s.ticks.dropped + s.ticks.repeated - previous.bad) / dt),
                });
                if (samples.length > 120) samples.shift();
                window.livefilterStats.chartSamples = samples.length;
                const last = samples[samples.length - 1];
                document.getElementById('now').textContent =
                  last.fps.toFixed(1) + ' fps · latency ' + (s.latencySeconds == null ? '–' : s.latencySeconds.toFixed(2) + ' s') +
                  (stats.latency == null ? '' : ' · player ' + stats.latency.toFixed(2) + ' s') +
                  ' · ' + s.ticks.dropped + ' dropped, ' + s.ticks.repeated + ' repeated · ' + s.phase;
                draw();
              }
              previous = { t: now, framesOut: s.framesOut, bad: s.ticks.dropped + s.ticks.repeated };
            } catch (e) { /* the run may have ended; keep the last picture */ }
            setTimeout(poll, 1000);
          }
          if (live) {
            document.getElementById('panel').hidden = false;
            if (!hls) document.querySelector('#legend .player').hidden = true;
            draw(); poll();
          }

          // Live chain control: GET /chain (livefilter.chain/1), PUT /chain with a chain or FILTER.key=value.
          const control = \(chainControl ? "true" : "false");
          window.livefilterStats.chain = null;
          function auth() {
            const t = sessionStorage.getItem('livefilterToken');
            return t ? { 'Authorization': 'Bearer ' + t } : {};
          }
          async function loadChain() {
            const r = await fetch('/chain?format=json', { cache: 'no-store', headers: auth() });
            if (r.status === 401) { document.getElementById('token').hidden = false; return; }
            const state = await r.json();
            window.livefilterStats.chain = state;
            document.getElementById('chainText').value = state.chain;
            const box = document.getElementById('sliders');
            box.textContent = '';
            for (const p of state.parameters) {
              // Huge ranges (angles, contrast) get a slider around the value; the text field takes any value.
              let lo = p.minimum, hi = p.maximum;
              if (hi - lo > 1000) { hi = Math.min(hi, Math.max(100, Math.abs(p.value) * 4)); lo = Math.max(lo, -hi); }
              const label = document.createElement('label');
              const name = document.createElement('span'); name.textContent = p.filter + '.' + p.key;
              const input = document.createElement('input');
              input.type = 'range'; input.min = lo; input.max = hi; input.value = p.value;
              input.step = p.integer ? 1 : (hi - lo) / 200;
              input.dataset.key = p.position + '.' + p.key;
              const value = document.createElement('span'); value.textContent = p.value;
              let timer = null;
              input.addEventListener('input', () => {
                value.textContent = p.integer ? input.value : Number(input.value).toFixed(2);
                clearTimeout(timer);
                timer = setTimeout(() => send(input.dataset.key + '=' + value.textContent, false), 150);
              });
              label.append(name, input, value);
              box.append(label);
            }
          }
          async function send(text, reload) {
            const reply = document.getElementById('chainReply');
            const r = await fetch('/chain', { method: 'PUT', body: text,
                                             headers: Object.assign({ 'Content-Type': '\(ChainEndpoint.contentType)' }, auth()) });
            const message = await r.text();
            reply.textContent = message;
            reply.className = r.ok ? '' : 'error';
            window.livefilterStats.chainReply = { status: r.status, message: message };
            if (r.status === 401) document.getElementById('token').hidden = false;
            if (r.ok && reload) loadChain();
            if (r.ok && !reload) document.getElementById('chainText').value = message.replace(/^applied at tick \\d+ \\([^)]*\\): /, '').trim();
          }
          if (control) {
            document.getElementById('control').hidden = false;
            document.getElementById('chainForm').addEventListener('submit', e => { e.preventDefault(); send(document.getElementById('chainText').value, true); });
            document.getElementById('tokenText').addEventListener('change', e => { sessionStorage.setItem('livefilterToken', e.target.value); loadChain(); });
            loadChain();
          }
        </script>
        </body>
        </html>
        """
    }
}

/// hls.js for the player page, served at `/hls.js`: `LIVEFILTER_HLSJS`, else where
/// scripts/install-hlsjs.sh puts it. Never in the repository; without it the page plays natively.
public enum PlayerScript {
    public static let defaultPath = "/usr/local/share/livefilter/hls.min.js"

    /// The file to serve, or nil when there is none (the page then does not ask for it).
    public static func hlsjs(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let path = environment["LIVEFILTER_HLSJS"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultPath
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { return nil }
        return path
    }
}
