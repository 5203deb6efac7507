#!/usr/bin/env python3
"""The include rules of docs/architecture.md, checked (run by `make test` and ctest).

- A public header (include/numprobe/**) includes only system headers and other public headers:
  what it includes is installed with it.
- Examples (examples/**) are consumers of the installed API: public headers only.
- A source or private header under src/<dir>/ includes internal headers only from the floors below
  it, and a same-directory header by its bare name. The floors are read from the build's own
  declarations, `numprobe_library(<name> [DIR <dir>] USES <libraries>...)` and
  `numprobe_floor(<dir> USES ...)` in CMakeLists.txt and cmake/*.cmake (cmake/numprobe_library.cmake):
  what a library links is what it may include, through the libraries it uses as well.
- Every quoted include resolves: "numprobe/x.h" to include/numprobe/x.h, "<dir>/x.h" to src/<dir>/x.h,
  a bare "x.h" beside the including file.
- What base owns stays in base: JSON is read by base alone (one reader,
  base/json_tree.h and base/json_cursor.h), and only src/base renames or fsyncs files by hand (the
  atomic writers of base/file_util.h), and only src/base starts work with std::async (the rest use
  base/worker_pool.h: a pool, parallel_for, run_in_background).

Exit status 1 with one line per violation, 0 when clean. `--root DIR` checks another tree (tests).
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)
DECLARATION = re.compile(r"\bnumprobe_(library|floor)\(([^)]*)\)", re.S)
KEYWORDS = {"DIR", "KIND", "USES", "PUBLIC_LINK", "LINK"}
# Hand-written commits of files: base/file_util.h's writers are the one place for them.
# Threads for parallel work: base/worker_pool.h (a pool, parallel_for, run_in_background).
HAND_THREADS = re.compile(r"\bstd::async\s*\(")
HAND_COMMIT = re.compile(r"\b(?:std::rename|std::filesystem::rename|fs::rename|::rename|::fsync|::fdatasync|"
                         r"rename|fsync|fdatasync)\s*\(")


def read_floors(root):
    """{folder under src/: [folders it may include]} from the CMake declarations."""
    libs = {}  # library name -> (folder, [used library names])
    floors = {}  # folder -> [used library names] (numprobe_floor)
    sources = [root / "CMakeLists.txt"] + sorted((root / "cmake").glob("*.cmake"))
    for path in sources:
        if not path.is_file():
            continue
        text = re.sub(r"#[^\n]*", "", path.read_text())
        for kind, body in DECLARATION.findall(text):
            words = body.split()
            if not words or words[0].startswith("$"):  # the helper's own definition
                continue
            name, args, key = words[0], {"USES": []}, None
            for w in words[1:]:
                if w in KEYWORDS:
                    key = w
                    args.setdefault(key, [])
                elif key:
                    args[key].append(w)
            if kind == "library":
                folder = args.get("DIR", [name])[0]
                libs[name] = (folder, args["USES"])
            else:
                floors[name] = args["USES"]
    for folder, uses in floors.items():  # a program's folder may be used by another (cli uses serve)
        libs.setdefault(folder, (folder, uses))

    def closure(uses, seen):
        for u in uses:
            if u in seen:
                continue
            if u not in libs:
                raise SystemExit(f"check_includes: a declaration uses unknown library '{u}'")
            seen.add(u)
            closure(libs[u][1], seen)
        return seen

    layers = {}
    for name, (folder, uses) in libs.items():
        layers[folder] = sorted({libs[u][0] for u in closure(uses, set())} | {folder})
    return layers


# Folders with no layer rule of their own that still must resolve their includes.
UNLAYERED = ["python/src", "python/engine_src", "python/common", "tests", "bench"]


def layer_of(rel, layers):
    """The folder key of a path under src/ (the longest declared folder holding it)."""
    parts = rel.parts[1:-1]
    for n in range(len(parts), 0, -1):
        key = "/".join(parts[:n])
        if key in layers:
            return key
    return None


def files(base, exts=(".h", ".cc", ".cu", ".inc")):
    return sorted(p for p in (ROOT / base).rglob("*") if p.suffix in exts and p.is_file())


def main():
    global ROOT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=ROOT, help="the source tree to check")
    ROOT = parser.parse_args().root.resolve()
    LAYERS = read_floors(ROOT)
    errors = []
    public = ROOT / "include"

    def resolve(path, name):
        """Where a quoted include points, or None."""
        for cand in (path.parent / name, public / name, ROOT / "src" / name):
            if cand.is_file():
                return cand
        return None

    for path in files("include"):
        rel = path.relative_to(ROOT)
        for kind, name in INCLUDE.findall(path.read_text()):
            if kind == "<":
                if name.startswith("numprobe/"):
                    errors.append(f"{rel}: <{name}>: public headers include each other with quotes")
                continue
            if not (public / name).is_file():
                errors.append(f"{rel}: public header includes non-public \"{name}\"")

    for path in files("examples"):
        rel = path.relative_to(ROOT)
        for kind, name in INCLUDE.findall(path.read_text()):
            if kind == '"' and not (public / name).is_file():
                errors.append(f"{rel}: an example includes non-public \"{name}\"")

    for path in files("src"):
        rel = path.relative_to(ROOT)
        layer = layer_of(rel, LAYERS)
        if layer is None:
            errors.append(f"{rel}: src/{rel.parent.relative_to('src')} is declared by no numprobe_library/numprobe_floor")
            continue
        text = path.read_text()
        if layer != "base":
            for m in HAND_COMMIT.finditer(re.sub(r"//[^\n]*", "", text)):
                errors.append(f"{rel}: {m.group(0)[:-1].strip()}(): files are committed by base/file_util.h's writers")
            for m in HAND_THREADS.finditer(re.sub(r"//[^\n]*", "", text)):
                errors.append(f"{rel}: std::async(): parallel work runs on base/worker_pool.h")
        for kind, name in INCLUDE.findall(text):
            if kind == "<":
                if name.startswith("nlohmann/"):
                    errors.append(f"{rel}: <{name}>: JSON is read by base (base/json_tree.h, base/json_cursor.h)")
                continue
            target = resolve(path, name)
            if target is None:
                errors.append(f"{rel}: \"{name}\" does not resolve")
                continue
            if target.is_relative_to(public) or target.parent == path.parent:
                continue
            dest = layer_of(target.relative_to(ROOT), LAYERS)
            if dest != layer and dest not in LAYERS[layer]:
                errors.append(f"{rel}: src/{layer} may not include \"{name}\" (src/{dest})")

    for base in UNLAYERED:
        for path in files(base):
            rel = path.relative_to(ROOT)
            for kind, name in INCLUDE.findall(path.read_text()):
                if kind == '"' and resolve(path, name) is None:
                    if not (ROOT / "tests" / "unit" / name).is_file() and not (ROOT / base / name).is_file():
                        errors.append(f"{rel}: \"{name}\" does not resolve")

    for e in errors:
        print(e)
    if errors:
        print(f"check_includes: {len(errors)} violation(s)", file=sys.stderr)
        return 1
    print("check_includes: clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
