/// The player page: native HLS in a `<video>` element (Safari, Chromium), with playback statistics a
/// headless browser check reads from the title and `window.livefilterStats`. During `run --serve`
/// it also draws a live chart beside the video from `/status` once a second: output frames per
/// second, end-to-end latency and dropped plus repeated ticks over the last two minutes.
enum PlayerPage {
    static func html(playlist: String, liveStatus: Bool) -> String {
        let src = playlist.replacingOccurrences(of: "\"", with: "%22").replacingOccurrences(of: "<", with: "%3C")
        return """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <title>livefilter</title>
        <style>
          body { background: #111; color: #ddd; font: 14px system-ui, sans-serif; margin: 2em; }
          main { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
          video { max-width: 100%; background: #000; }
          #stats, #legend { font-family: ui-monospace, monospace; margin-top: 1em; }
          #chart { background: #1b1b1b; border: 1px solid #333; }
          .fps { color: #4fc3f7; } .latency { color: #ffb74d; } .dropped { color: #ef5350; }
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
        <div id="legend"><span class="fps">■ fps</span> · <span class="latency">■ latency s</span> · <span class="dropped">■ dropped+repeated ticks/s</span></div>
        <div id="now"></div>
        </div>
        </main>
        <script>
          const v = document.getElementById('v');
          const out = document.getElementById('stats');
          window.livefilterStats = { frames: 0, currentTime: 0, error: null, retries: 0, chartSamples: 0, status: null };
          // The playlist may not exist yet (run --serve): retry every 2 s for a minute.
          v.addEventListener('error', () => {
            window.livefilterStats.error = v.error ? v.error.code + ' ' + v.error.message : 'error';
            out.textContent = 'error: ' + window.livefilterStats.error;
            document.title = 'livefilter error';
            if (window.livefilterStats.retries++ < 30) setTimeout(() => { v.load(); v.play().catch(() => {}); }, 2000);
          });
          v.addEventListener('playing', () => { window.livefilterStats.error = null; });
          function tick() {
            const q = v.getVideoPlaybackQuality ? v.getVideoPlaybackQuality() : null;
            const frames = q ? q.totalVideoFrames : (v.webkitDecodedFrameCount || 0);
            window.livefilterStats.frames = frames;
            window.livefilterStats.currentTime = v.currentTime;
            out.textContent = 'frames ' + frames + ' · time ' + v.currentTime.toFixed(2) + ' s · ' + v.videoWidth + 'x' + v.videoHeight;
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
            const latencyTop = Math.ceil(Math.max(4, ...samples.map(s => s.latency)) * 1.1);
            g.font = '11px monospace';
            g.fillStyle = '#4fc3f7'; g.fillText(String(fpsTop), 4, pad + 4); g.fillText('fps', 4, pad + 16);
            g.fillStyle = '#ffb74d'; g.fillText(latencyTop + ' s', W - right + 4, pad + 4);
            g.fillStyle = '#888'; g.fillText('0', 4, H - pad + 4); g.fillText('last ' + span + ' s', W - right - 70, H - 6);
            const series = [['fps', '#4fc3f7', fpsTop], ['latency', '#ffb74d', latencyTop], ['dropped', '#ef5350', fpsTop]];
            for (const [key, color, top] of series) {
              g.strokeStyle = color; g.lineWidth = 2.5; g.beginPath();
              samples.forEach((s, i) => {
                const x = W - right - (samples.length - 1 - i) * (W - right - left) / span;
                const y = H - pad - Math.min(1, s[key] / top) * (H - 2 * pad);
                if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
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
                  dropped: Math.max(0, (s.ticks.dropped + s.ticks.repeated - previous.bad) / dt),
                });
                if (samples.length > 120) samples.shift();
                window.livefilterStats.chartSamples = samples.length;
                const last = samples[samples.length - 1];
                document.getElementById('now').textContent =
                  last.fps.toFixed(1) + ' fps · latency ' + (s.latencySeconds == null ? '–' : s.latencySeconds.toFixed(2) + ' s') +
                  ' · ' + s.ticks.dropped + ' dropped, ' + s.ticks.repeated + ' repeated · ' + s.phase;
                draw();
              }
              previous = { t: now, framesOut: s.framesOut, bad: s.ticks.dropped + s.ticks.repeated };
            } catch (e) { /* the run may have ended; keep the last picture */ }
            setTimeout(poll, 1000);
          }
          if (live) { document.getElementById('panel').hidden = false; draw(); poll(); }
        </script>
        </body>
        </html>
        """
    }
}
