#!/usr/bin/env python3
"""The include rules of docs/architecture.md, checked (run by `make test` and ctest).

- A public header (include/numprobe/**) includes only system headers and other public headers:
  what it includes is installed with it.
- Examples (examples/**) are consumers of the installed API: public headers only.
- A source or private header under src/<dir>/ includes internal headers only from the floors below
  it (LAYERS), and a same-directory header by its bare name.
- Every quoted include resolves: "numprobe/x.h" to include/numprobe/x.h, "<dir>/x.h" to src/<dir>/x.h,
  a bare "x.h" beside the including file.

Exit status 1 with one line per violation, 0 when clean.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)

# src/<dir> -> the src/ folders its files may include (besides public headers). The floors, bottom
# up: base (general I/O), core (numerics), format (msprobe files), then the engines and the fronts.
ENGINE = ["base", "core", "format"]
LAYERS = {
    "base": ["base"],
    "core": ["base", "core"],
    "format": ENGINE,
    "compare": ENGINE + ["compare"],
    "graph": ENGINE + ["compare", "graph"],
    "ckpt": ENGINE + ["compare", "ckpt"],
    "configcheck": ["base", "configcheck"],
    "serve": ENGINE + ["graph", "serve"],
    "acccheck": ENGINE + ["acccheck"],
    "capture": ENGINE + ["capture"],
    "monitor": ENGINE + ["monitor"],
    "convert": ENGINE + ["capture", "convert"],
    "capture/torch": ENGINE + ["capture", "monitor", "torch_common"],  # and itself, as every layer
    "torch_common": ["core", "torch_common"],
    "replay": ENGINE + ["acccheck", "replay", "torch_common"],
    "cli": ENGINE + ["compare", "graph", "ckpt", "configcheck", "serve", "acccheck", "capture", "monitor", "convert", "cli"],
}
# Folders with no layer rule of their own that still must resolve their includes.
UNLAYERED = ["python/src", "python/engine_src", "python/common", "tests", "bench"]


def layer_of(rel):
    """The LAYERS key of a path under src/ (the longest matching folder)."""
    parts = rel.parts[1:-1]
    for n in range(len(parts), 0, -1):
        key = "/".join(parts[:n])
        if key in LAYERS:
            return key
    return None


def files(base, exts=(".h", ".cc", ".cu", ".inc")):
    return sorted(p for p in (ROOT / base).rglob("*") if p.suffix in exts and p.is_file())


def main():
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
        layer = layer_of(rel)
        if layer is None:
            errors.append(f"{rel}: src/{rel.parts[1]} has no layer in scripts/check_includes.py")
            continue
        for kind, name in INCLUDE.findall(path.read_text()):
            if kind == "<":
                continue
            target = resolve(path, name)
            if target is None:
                errors.append(f"{rel}: \"{name}\" does not resolve")
                continue
            if target.is_relative_to(public) or target.parent == path.parent:
                continue
            dest = layer_of(target.relative_to(ROOT))
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
