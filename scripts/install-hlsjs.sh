#!/usr/bin/env bash
# Installs hls.js for the player page (it plays Low-Latency HLS with it; without it, native HLS).
# hls.js is in no Debian package; the gradio wheel on PyPI bundles a built hls.js, as one ES module
# chunk of its front end (gradio/templates/frontend/assets/hls-*.js). This script downloads that
# wheel once (pinned, kept in a cache), takes the chunk out, turns it into a classic script that
# sets `self.Hls` (as hls.js's own hls.min.js does) and writes it, with where it came from, to
#
#   $LIVEFILTER_SHARE/hls.min.js            (default /usr/local/share/livefilter)
#   $LIVEFILTER_SHARE/hls.min.js.version    hls.js version, gradio version, path in the wheel, sha256
#
# `livefilter serve` and `run --serve` serve that file at /hls.js (LIVEFILTER_HLSJS overrides the
# path). The file is never committed. Idempotent: does nothing when the pinned version is there.
# Run by scripts/install-deps.sh with LIVEFILTER_PLAYERS=1; needs python3 with pip, and PyPI.
set -euo pipefail

gradio_version="6.31.0"
hlsjs_version="1.6.15"
chunk_sha256="6692562e22d2d7b7325223f3cdc306c7bdad4e18b215a738817f84aa8832d4f2"
share="${LIVEFILTER_SHARE:-/usr/local/share/livefilter}"
cache="${LIVEFILTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/livefilter}"
target="$share/hls.min.js"

say() { echo "install-hlsjs: $*"; }

if [[ -f "$target" && -f "$target.version" ]] && grep -q "^hls.js $hlsjs_version " "$target.version"; then
    say "hls.js $hlsjs_version present at $target"
    exit 0
fi

mkdir -p "$cache/gradio-$gradio_version" "$share"
wheel="$(ls "$cache/gradio-$gradio_version"/gradio-"$gradio_version"-*.whl 2>/dev/null | head -1 || true)"
if [[ -z "$wheel" ]]; then
    say "downloading the gradio $gradio_version wheel from PyPI (about 31 MB, once) into $cache"
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$cache/gradio-$gradio_version" "gradio==$gradio_version"
    wheel="$(ls "$cache/gradio-$gradio_version"/gradio-"$gradio_version"-*.whl | head -1)"
fi

python3 - "$wheel" "$target" "$hlsjs_version" "$gradio_version" "$chunk_sha256" <<'PY'
import hashlib, os, re, sys, zipfile

wheel, target, want_version, gradio_version, want_sha = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if re.fullmatch(r"gradio/templates/frontend/assets/hls-[\w-]+\.js", n)]
    if len(names) != 1:
        sys.exit(f"install-hlsjs: expected one hls chunk in {wheel}, found {names}")
    data = z.read(names[0])
sha = hashlib.sha256(data).hexdigest()
if sha != want_sha:
    sys.exit(f"install-hlsjs: {names[0]} has sha256 {sha}, expected {want_sha}")
text = data.decode("utf-8")
if f"`{want_version}`" not in text:
    sys.exit(f"install-hlsjs: hls.js {want_version} not found in {names[0]}")
# The class with `static get version()` is Hls; the module's only export statement ends the file.
hls = re.search(r"([A-Za-z_$][\w$]*)=class [A-Za-z_$][\w$]*\{static get version\(\)", text)
export = re.search(r"export\{[^}]*\};?\s*(//# sourceMappingURL=\S*\s*)?$", text)
if not hls or not export or "import.meta" in text or re.search(r"(^|[;}])import[\s{*]", text):
    sys.exit(f"install-hlsjs: {names[0]} is not the self-contained module this script knows how to wrap")
# A classic script, so the page needs no module loading, and an hls.min.js from hls.js's own
# releases (LIVEFILTER_HLSJS) is a drop-in: the module's top-level names stay in a function scope.
body = text[:export.start()]
script = f'/* hls.js {want_version} (Apache-2.0), from the gradio {gradio_version} wheel: {names[0]} */\n' \
         f'(function(){{"use strict";\n{body}\nself.Hls={hls.group(1)};}})();\n'
tmp = target + ".tmp"
with open(tmp, "w") as f: f.write(script)
os.replace(tmp, target)
with open(target + ".version", "w") as f:
    f.write(f"hls.js {want_version} gradio {gradio_version} {names[0]} sha256 {sha}\n")
print(f"install-hlsjs: hls.js {want_version} written to {target} (from gradio {gradio_version}: {names[0]})")
PY
