#!/usr/bin/env bash
# The module layering, held: fails (exit 1, one `file:line: error:` per broken rule) when
#  1. a file in Sources/<target>/ or Tests/<target>/ imports a module its target does not declare
#     in Package.swift (SwiftPM itself lets a target import any module built before it), or
#     Testing/XCTest outside a test target;
#  2. docs/ARCHITECTURE.md's module table ("Modules and what each may import") differs from
#     Package.swift: every target has one row, and its "may import" column (backticked names,
#     comma-separated, or — for none) is exactly the target's declared dependencies;
#  3. a module of the shipped library or CLI other than MediaIO (and CFFmpegLog, its C helper)
#     depends on CFFmpeg: FFmpeg stays in MediaIO. The bench and the tests may use it as an oracle
#     when their rows say so;
#  4. a target imports more of a module than its row allows: `Filters` (`FrameSize`, …) in the
#     column means only scoped imports of those declarations (`import struct Filters.FrameSize`);
#  5. a public declaration in MediaIO names an FFmpeg type (`AVFrame`, `UnsafeMutablePointer<AV…>`,
#     `OpaquePointer`) in its signature line;
#  6. a name the table's "job" column gives a module (`PlanarChainRenderer`, `Frame.planarView`,
#     `forLogs`, `LowLatencyFiles.swift`) is not declared in that module or one it may import (a file:
#     not in its folder), and is not a library's or a standard's name (EXTERNAL_NAMES; snake_case
#     without our C prefix `lf_`);
#  7. in the modules of NAMED_FILES, a file is not named for what it holds (its name, before any `+`,
#     should be a type it declares or extends, such a type followed by an aspect — `GaussianBlurKernels`,
#     `MediaPlaylistParser`: the type declared in the module — or the module's name), or a file
#     declares more than MAX_PUBLIC_TYPES public types. A file that is one thing by
#     another rule is listed in FILE_EXCEPTIONS with what it holds.
# Needs swift (for `swift package dump-package`: no build, no network, about 1 s) and python3.
#
#   scripts/check-imports.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v swift >/dev/null 2>&1 && [[ -x /opt/swift/usr/bin/swift ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

work="$(mktemp -d /tmp/check-imports.XXXXXX)"
trap 'rm -rf "$work"' EXIT
# Its own scratch folder: a build running in .build holds that one's lock (dump-package writes nothing).
if ! swift package --scratch-path "$work/scratch" dump-package >"$work/manifest.json" 2>"$work/err"; then
    echo "check-imports: swift package dump-package failed:" >&2
    cat "$work/err" >&2
    exit 1
fi

python3 - "$work/manifest.json" <<'PY'
import json, os, re, sys

# The toolchain's own modules: any target may import these without declaring them.
TOOLCHAIN = {"Swift", "_Concurrency", "_StringProcessing", "RegexBuilder", "Observation", "Synchronization",
             "Foundation", "FoundationEssentials", "FoundationInternationalization", "FoundationNetworking",
             "FoundationXML", "Dispatch", "Glibc", "Musl", "Darwin", "os"}
TEST_ONLY = {"Testing", "XCTest"}
# Package products whose module is not named like the product (none yet): product -> modules.
PRODUCT_MODULES = {}
# ARCHITECTURE.md: "Only MediaIO imports CFFmpeg" among the shipped modules; CFFmpegLog is its C half.
FFMPEG = "CFFmpeg"
FFMPEG_HOSTS = {"MediaIO", "CFFmpegLog"}
TABLE_FILE = "docs/ARCHITECTURE.md"
TABLE_HEADING = "## Modules and what each may import"

errors = []
def error(where, message):
    errors.append(f"{where}: error: {message}")

manifest = json.load(open(sys.argv[1]))
targets = {t["name"]: t for t in manifest["targets"]}

def dependency_modules(target):
    modules = []
    for dep in target.get("dependencies", []):
        if "byName" in dep:
            modules.append(dep["byName"][0])
        elif "target" in dep:
            modules.append(dep["target"][0])
        elif "product" in dep:
            name = dep["product"][0]
            modules.extend(PRODUCT_MODULES.get(name, [name]))
    return modules

declared = {name: set(dependency_modules(t)) for name, t in targets.items()}

def target_dir(t):
    if t.get("path"):
        return t["path"]
    return os.path.join("Tests" if t["type"] == "test" else "Sources", t["name"])

dirs = {name: target_dir(t) for name, t in targets.items()}

# --- 1. imports against Package.swift ------------------------------------------------------------
IMPORT = re.compile(r"""^\s*(?:@[A-Za-z_]\w*(?:\([^)]*\))?\s+)*            # @testable, @_exported, @_spi(X)…
                        (?:(?:public|package|internal|fileprivate|private|open)\s+)?
                        import\s+(?:(typealias|struct|class|enum|protocol|let|var|func)\s+)?
                        ([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)*)""", re.X)

def imports(path):
    """(line number, module, declaration or None, text) for each import line, outside comments and
    multi-line string literals."""
    found, in_block, in_string = [], False, False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if in_string:
                if line.count('"""') % 2 == 1:
                    in_string = False
                continue
            if in_block:
                if "*/" in line:
                    in_block = False
                continue
            stripped = line.strip()
            if stripped.startswith("/*") and "*/" not in stripped:
                in_block = True
                continue
            m = IMPORT.match(line)
            if m:
                kind, module, rest = m.groups()
                found.append((number, module, rest[1:] if kind and rest else None, stripped))
            elif line.count('"""') % 2 == 1:
                in_string = True
    return found

def swift_files(directory):
    for root, subdirs, files in os.walk(directory):
        subdirs.sort()
        for name in sorted(files):
            if name.endswith(".swift"):
                yield os.path.join(root, name)

for top in ("Sources", "Tests"):
    for entry in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        path = os.path.join(top, entry)
        if os.path.isdir(path) and path not in dirs.values() and any(swift_files(path)):
            error(path, "Swift files in a folder no target of Package.swift owns: nothing checks their imports")

all_modules = set(targets) | {m for deps in declared.values() for m in deps}
scans = {}
for name, t in targets.items():
    if t["type"] == "system" or not os.path.isdir(dirs[name]):
        continue
    for path in swift_files(dirs[name]):
        for number, module, declaration, text in imports(path):
            scans.setdefault(name, []).append((path, number, module, declaration, text))
            if module == name or module in TOOLCHAIN or module in declared[name]:
                continue
            where = f"{path}:{number}"
            if module in TEST_ONLY:
                if t["type"] != "test":
                    error(where, f"`{text}`: {module} is for test targets; {name} is not one")
                continue
            allowed = ", ".join(sorted(declared[name])) or "nothing of the package's"
            if module in all_modules:
                error(where, f"`{text}`: {name} does not declare {module} in Package.swift (it may import: "
                             f"{allowed}). Import only what the target declares; to change the layering, "
                             f"change Package.swift and the table in {TABLE_FILE} together.")
            else:
                error(where, f"`{text}`: {module} is neither a dependency of {name} in Package.swift nor a "
                             f"toolchain module (it may import: {allowed}).")

# --- 2. the table against Package.swift ----------------------------------------------------------
ENTRY = re.compile(r"`([^`]+)`(?:\s*\(([^)]*)\))?")
def parse_may_import(cell):
    """{module: None or {declarations}} from "`A`, `B` (`X`, `Y`)"; None when unparseable."""
    cell = cell.strip()
    if cell in ("—", "-", ""):
        return {}
    result, position = {}, 0
    for m in ENTRY.finditer(cell):
        if cell[position:m.start()].strip() not in ("", ","):
            return None
        scope = None
        if m.group(2) is not None:
            scope = set(re.findall(r"`([^`]+)`", m.group(2)))
            if re.sub(r"`[^`]+`|[,\s]", "", m.group(2)):
                return None
        result[m.group(1)] = scope
        position = m.end()
    return result if cell[position:].strip() == "" else None

rows, jobs = {}, {}
lines = open(TABLE_FILE, encoding="utf-8").read().split("\n")
try:
    start = lines.index(TABLE_HEADING)
except ValueError:
    error(TABLE_FILE, f"no section '{TABLE_HEADING}' with the module table")
    start = None
if start is not None:
    header_seen = False
    for number in range(start + 1, len(lines)):
        line = lines[number]
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        where = f"{TABLE_FILE}:{number + 1}"
        if not header_seen:
            header_seen = True
            if cells[-1] != "may import":
                error(where, "the table's last column must be 'may import'")
            continue
        if set(cells[0]) <= set("-: "):
            continue
        names = re.findall(r"`([^`]+)`", cells[0])
        may = parse_may_import(cells[-1])
        if may is None:
            error(where, f"cannot read the 'may import' column {cells[-1]!r}: write backticked module names, "
                         "comma-separated (`A`, `B`), a scoped one as `A` (`Declaration`, …), or — for none")
        for name in names:
            if name in rows:
                error(where, f"`{name}` has a second row (first on line {rows[name][0]})")
            rows[name] = (number + 1, may)
            jobs[name] = " | ".join(cells[1:-1])
    for name in sorted(targets):
        if name not in rows:
            error(TABLE_FILE, f"no row for target `{name}` in the module table; its Package.swift "
                              f"dependencies: {', '.join(sorted(declared[name])) or '—'}")
    for name, (number, may) in sorted(rows.items()):
        where = f"{TABLE_FILE}:{number}"
        if name not in targets:
            error(where, f"`{name}` has a row but is not a target in Package.swift")
            continue
        if may is None:
            continue
        missing, extra = declared[name] - set(may), set(may) - declared[name]
        if missing or extra:
            parts = ([f"Package.swift also declares {', '.join(sorted(missing))}"] if missing else []) + \
                    ([f"Package.swift does not declare {', '.join(sorted(extra))}"] if extra else [])
            error(where, f"`{name}` row disagrees with Package.swift: {'; '.join(parts)}")

# --- 3. FFmpeg stays in MediaIO ------------------------------------------------------------------
shipped, queue = set(), [t for p in manifest.get("products", []) for t in p.get("targets", [])]
while queue:
    name = queue.pop()
    if name in targets and name not in shipped:
        shipped.add(name)
        queue.extend(m for m in declared[name] if m in targets)
manifest_lines = open("Package.swift", encoding="utf-8").read().split("\n")
def manifest_line(name):
    """Package.swift:LINE of the target's declaration, for a clickable message."""
    for number, line in enumerate(manifest_lines, 1):
        if re.search(r'\bname:\s*"' + re.escape(name) + '"', line) and "product(" not in line:
            return f"Package.swift:{number}"
    return "Package.swift"

for name in sorted(shipped - FFMPEG_HOSTS - {FFMPEG}):
    if FFMPEG in declared[name]:
        error(manifest_line(name), f"{name} depends on {FFMPEG}: among the shipped modules (the products' "
                                   f"targets and what they use) only {' and '.join(sorted(FFMPEG_HOSTS))} may "
                                   f"({TABLE_FILE}, under the module table). Give it a Swift API in MediaIO instead.")

# --- 4. scoped dependencies ----------------------------------------------------------------------
for name, (number, may) in rows.items():
    for module, scope in (may or {}).items():
        if scope is None:
            continue
        for path, line, imported, declaration, text in scans.get(name, []):
            if imported != module:
                continue
            if declaration is None:
                error(f"{path}:{line}", f"`{text}`: {name} may take from {module} only "
                                        f"{', '.join(sorted(scope))} ({TABLE_FILE}:{number}): import each by a "
                                        f"scoped import, e.g. `import struct {module}.{sorted(scope)[0]}`")
            elif declaration.split(".")[0] not in scope:
                error(f"{path}:{line}", f"`{text}`: {declaration} is not one of the {module} declarations "
                                        f"{name} may use ({', '.join(sorted(scope))}; {TABLE_FILE}:{number})")

# --- 5. no FFmpeg type in MediaIO's public signatures --------------------------------------------
PUBLIC = re.compile(r"^\s*(?:@[A-Za-z_]\w*(?:\([^)]*\))?\s+)*(?:\w+\s+)*(?:public|open)\s")
FFMPEG_TYPE = re.compile(r"\bUnsafe(?:Mutable)?(?:Raw)?Pointer<\s*AV|\bOpaquePointer\b|\bAV[A-Z][A-Za-z]*\b|\bSws[A-Z]\w*")
if "MediaIO" in dirs and os.path.isdir(dirs["MediaIO"]):
    for path in swift_files(dirs["MediaIO"]):
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if PUBLIC.match(line) and FFMPEG_TYPE.search(line.split("{")[0].split("//")[0]):
                    error(f"{path}:{number}", "a public declaration names an FFmpeg type; copy what callers need "
                                              "into a Swift value (the pointer stays a private `let`)")

# --- 6. the names the table gives each module exist there --------------------------------------
# Names of libraries and protocols that a row may use: not declared in this package. A snake_case
# name is C's or a standard's (`curl_multi_poll`, SCTE-35's `splice_info_section`) unless it has our
# C code's prefix (`lf_log_add_secret`); this package's Swift names are camelCase.
EXTERNAL_NAMES = {"Logger": "swift-log's", "Host": "an HTTP header field", "Origin": "an HTTP header field"}
OWN_C_PREFIX = "lf_"
SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
SWIFT_DECLARATION = re.compile(r"\b(struct|class|enum|protocol|actor|typealias|extension|func|var|let|case)\s+"
                               r"(?:`)?([A-Za-z_]\w*)")
C_DECLARATION = re.compile(r"\b([A-Za-z_]\w*)\s*\(|\btypedef\b[^;]*?\b([A-Za-z_]\w*)\s*;")
declarations = {}
def declared_names(name):
    """(types and extended types, other declared names, file names) in a target's folder."""
    if name in declarations:
        return declarations[name]
    types, members, files = set(), set(), set()
    directory = dirs.get(name)
    for root, _, names in os.walk(directory) if directory and os.path.isdir(directory) else []:
        for file in names:
            files.add(file)
            path = os.path.join(root, file)
            if file.endswith(".swift"):
                for line in open(path, encoding="utf-8"):
                    code = line.split("//")[0]
                    for kind, declared_name in SWIFT_DECLARATION.findall(code):
                        (types if kind in ("struct", "class", "enum", "protocol", "actor", "typealias", "extension")
                         else members).add(declared_name)
                    case = re.match(r"\s*(?:indirect\s+)?case\s+(.*)", code)
                    if case:
                        members.update(re.findall(r"(?:^|,)\s*([a-z_]\w*)", case.group(1)))
            elif file.endswith((".h", ".c")):
                for function, typedef in C_DECLARATION.findall(open(path, encoding="utf-8", errors="replace").read()):
                    members.add(function or typedef)
    declarations[name] = (types, members, files)
    return declarations[name]

IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
for name, (number, _) in sorted(rows.items()):
    if name not in targets:
        continue
    scope = [name] + sorted(m for m in declared[name] if m in targets)
    where = f"{TABLE_FILE}:{number}"
    for token in re.findall(r"`([^`]+)`", jobs.get(name, "")):
        text = re.sub(r"\(.*\)$", "", token)           # `Frame.isPlanarYUV420(size:range:)`
        if text.endswith(".swift"):
            if not any(text in declared_names(m)[2] for m in scope[:1]):
                error(where, f"`{name}` row names {text}, which is not a file in {dirs[name]}/")
            continue
        if not IDENTIFIER.fullmatch(text) or text in all_modules or text in EXTERNAL_NAMES or \
                (SNAKE_CASE.fullmatch(text) and not text.startswith(OWN_C_PREFIX)):
            continue                                   # a flag, a path, a URL, a module, a library's or a standard's name
        parts = text.split(".")
        def found(m):
            types, members, _ = declared_names(m)
            return (parts[0] in types or parts[0] in members) and all(p in types or p in members for p in parts[1:])
        if not any(found(m) for m in scope):
            error(where, f"`{name}` row names `{token}`, which is declared neither in {name} nor in a module it may "
                         f"import ({', '.join(scope[1:]) or 'none'}): say what the module holds now, or list a "
                         f"library's own name in EXTERNAL_NAMES")

# --- 7. files named for what they hold -----------------------------------------------------------
NAMED_FILES = ("Filters", "HLS", "LiveFilter")
MAX_PUBLIC_TYPES = 5
FILE_EXCEPTIONS = {   # path: what it holds, when that is one thing by another rule than a type's name
    "Sources/Filters/Geometry.swift": "the picture's geometry and colour values (PixelRect, RGBColor)",
    "Sources/Filters/Region.swift": "region=: the spec and shapes, the mask, the filters that take one",
    "Sources/Filters/SIMDConversions.swift": "free functions: conversions between vector element types",
    "Sources/Filters/Timeline.swift": "the chain's time: FrameTime, timed renderers, Keyframes, EnableRanges",
    "Sources/HLS/Encryption.swift": "EXT-X-KEY's values: method, IV, key",
    "Sources/HLS/LowLatency.swift": "the Low-Latency HLS tags' values, one type per tag",
    "Sources/HLS/RedactedURL.swift": "the one redaction of messages (String.redactingSecrets, KnownSecrets)",
}
TOP_LEVEL = re.compile(r"^(?:@[A-Za-z_]\w*(?:\([^)]*\))?\s+)*((?:(?:public|package|internal|fileprivate|private|open|"
                       r"final|indirect)\s+)*)(struct|class|enum|protocol|actor|typealias|extension)\s+([A-Za-z_][\w.]*)")
for module in NAMED_FILES:
    if module not in dirs or not os.path.isdir(dirs[module]):
        continue
    module_types = declared_names(module)[0]
    for path in swift_files(dirs[module]):
        held, public = set(), []
        for line in open(path, encoding="utf-8"):
            m = TOP_LEVEL.match(line)
            if m:
                held.add(m.group(3).split(".")[0])
                if m.group(2) != "extension" and re.search(r"\b(public|open)\b", m.group(1)):
                    public.append(m.group(3))
        if path in FILE_EXCEPTIONS:
            continue
        stem = os.path.basename(path)[:-len(".swift")].split("+")[0]
        named = stem in held or stem == module or any(
            stem.startswith(t) and stem[len(t)].isupper() for t in held | module_types if len(stem) > len(t))
        if not named:
            error(path, f"the file's name says nothing it declares ({', '.join(sorted(held)) or 'no type'}): name it for "
                        f"the type it holds (Type.swift, Type+Aspect.swift, TypeAspect.swift), split it, or list it in "
                        f"FILE_EXCEPTIONS with what it holds")
        if len(public) > MAX_PUBLIC_TYPES:
            error(path, f"{len(public)} public types in one file ({', '.join(public)}; at most {MAX_PUBLIC_TYPES}): "
                        f"give them files of their own, or list it in FILE_EXCEPTIONS with what it holds")

for e in errors:
    print(e)
if errors:
    print(f"check-imports: {len(errors)} problem(s); the layering is in {TABLE_FILE} ('{TABLE_HEADING[3:]}')")
    sys.exit(1)
checked = sum(len(v) for v in scans.values())
print(f"check-imports: {checked} imports in {len(scans)} targets match Package.swift and {TABLE_FILE}; the table's "
      f"names exist; files in {', '.join(NAMED_FILES)} are named for what they hold")
PY
