#!/usr/bin/env bash
# Idempotent machine setup: installs the Debian packages numprobe builds, tests and runs with.
# A fast no-op when everything is present. Needs root (or sudo) only when something is missing.
# Works on Debian 12 (bookworm: torch 1.13, Python 3.11) and Debian 13 (trixie: its own python3-torch,
# Python 3.13): every name below exists in both (libclang-rt-dev is the release's default clang's).
# The torch 2.x lane's pip packages are scripts/setup_venv.sh's.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache clang libclang-rt-dev clang-format
  zlib1g-dev libisal-dev libhwy-dev libxxhash-dev libzstd-dev libcli11-dev libsimdjson-dev
  libgtest-dev libgmock-dev libbenchmark-dev libxlsxwriter-dev
  python3-numpy python3-pytest python3-openpyxl
  # Google's protobuf runtime: a second reader of the monitor's TensorBoard event files
  python3-protobuf
  libopenblas0-pthread
  # Netlib's reference BLAS, for bench/diagnosis's noise pairs (LD_LIBRARY_PATH=.../blas); OpenBLAS
  # keeps the higher alternatives priority, so it stays the default libblas.so.3
  libblas3
  libsqlite3-dev libcpp-httplib-dev
  libtorch-dev python3-torch python3-torchvision pybind11-dev python3-dev
  # headless browser for the viewer checks (tb-graph-ascend), driven by Playwright
  chromium
  # mpirun for the sharded compare's launcher test (compare --shard auto --merge under MPI)
  openmpi-bin
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
# apt-get update only when the package lists are missing or a first install attempt fails.
if ! $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"; then
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
