#!/usr/bin/env bash
# Makes (or refreshes) the test venv .venv/<lane> from tests/requirements/<lane>.txt with Python 3.11,
# the version whose torch wheels lie on this machine kind's disk. A no-op (well under a second) when
# the venv already holds exactly that file's pins: a stamp keeps the hash of the file it was made
# from. Downloads go through pip's own cache (~/.cache/pip), so a second machine state re-installs
# from disk. Prints the venv's python on stdout, everything else on stderr.
#   scripts/setup_venv.sh torch2        -> .venv/torch2/bin/python
# A requirements file may name the Pythons its wheels exist for, in a line `# python: 3.11 3.12`
# (mindspore.txt: MindSpore has no wheel for 3.13). Where none of them is found, the script says so
# and exits with status 3, so that a lane can skip with that reason (make test-mindspore).
set -euo pipefail
cd "$(dirname "$0")/.."
lane=${1:?usage: setup_venv.sh LANE (a file tests/requirements/LANE.txt)}
req=tests/requirements/$lane.txt
[ -f "$req" ] || { echo "setup_venv: no requirements file $req" >&2; exit 2; }
venv=.venv/$lane
stamp=$venv/.numprobe-requirements.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)

if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "$PWD/$venv/bin/python"
  exit 0
fi

# NUMPROBE_VENV_PYTHON if set, else the first python3.11 / python3 that is 3.11 and can make a venv
# with pip (pyenv's on this machine kind; Debian 12's own needs python3.11-venv): torch's wheels for
# 3.11 lie on this machine kind's disk. Failing that, any Python >= 3.10 that can, whose pip then
# downloads the pinned wheels (several GB for torch's CUDA build).
only=$(sed -n 's/^# python:[[:space:]]*//p' "$req" | head -n1)
find_python() {
  local c want wants=('== (3, 11)' '>= (3, 10)') candidates v
  candidates="${NUMPROBE_VENV_PYTHON:-} python3.11 python3 /usr/bin/python3.11 /usr/bin/python3"
  if [ -n "$only" ]; then
    wants=()
    for v in $only; do
      wants+=("== (${v%%.*}, ${v#*.})")
      candidates="$candidates python$v /usr/bin/python$v"
    done
  fi
  for want in "${wants[@]}"; do
    for c in $candidates; do
      command -v "$c" >/dev/null 2>&1 || continue
      "$c" -c "import sys, ensurepip; sys.exit(not sys.version_info[:2] $want)" 2>/dev/null || continue
      command -v "$c"
      return 0
    done
  done
  return 1
}
py=$(find_python) || {
  if [ -n "$only" ]; then
    echo "setup_venv: $lane needs Python $only (with venv/ensurepip); none found (set NUMPROBE_VENV_PYTHON)" >&2
    exit 3
  fi
  echo "setup_venv: no Python >= 3.10 with venv/ensurepip found (set NUMPROBE_VENV_PYTHON)" >&2
  exit 1
}

echo "setup_venv: making $venv with $py from $req" >&2
rm -rf "$venv"
"$py" -m venv "$venv"
# Quiet, but keep pip's errors; pip's notices about this machine's local index folders are noise.
if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" 2> "$venv.pip.log"; then
  grep -v 'is ignored: it is neither a file nor a directory' "$venv.pip.log" >&2 || true
  echo "setup_venv: pip install -r $req failed (log above)" >&2
  exit 1
fi
rm -f "$venv.pip.log"
echo "$want" > "$stamp"
# The lane's first pinned package and the version pip installed (torch for torch2, mindspore, ...).
first=$(grep -m1 -E '^[A-Za-z0-9_.-]+==' "$req" | cut -d= -f1)
echo "setup_venv: $venv ready ($("$venv/bin/python" -c "import importlib.metadata as m, sys; print(sys.argv[1], m.version(sys.argv[1]))" "$first"))" >&2
echo "$PWD/$venv/bin/python"
