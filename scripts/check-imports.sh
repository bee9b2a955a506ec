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
#     `OpaquePointer`) in its signature line.
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

rows = {}
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

for e in errors:
    print(e)
if errors:
    print(f"check-imports: {len(errors)} problem(s); the layering is in {TABLE_FILE} ('{TABLE_HEADING[3:]}')")
    sys.exit(1)
checked = sum(len(v) for v in scans.values())
print(f"check-imports: {checked} imports in {len(scans)} targets match Package.swift and {TABLE_FILE}")
PY
