"""Installed package versions: every Python distribution (importlib.metadata), written as msprobe
writes its `pip` member (`Name=version` lines), plus the Debian packages that own the shared
libraries this process has loaded and that matter to numerics (torch, numpy, BLAS/LAPACK, CUDA),
as `deb:<package>=<version>` lines. The compare (src/config_check/config_compare_env_pip.cc) checks
the packages a training depends on."""
import glob
import os
import re
from importlib import metadata

# Loaded libraries whose Debian package is recorded.
LIBRARY_PATTERN = re.compile(r"^lib(torch|c10|openblas|blas|lapack|mkl|cudart|cublas|cudnn|nccl|"
                             r"gomp|blis|omp|hccl)|^_multiarray_umath")
# Python extension modules whose Debian package is recorded (python3-torch, python3-numpy).
MODULE_PATTERN = re.compile(r"/dist-packages/(torch|numpy)/_C[.]|/dist-packages/numpy/core/_multi")


def _python_packages():
    seen = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name") if dist.metadata else None
        if name and name not in seen:
            seen[name] = dist.version
    return seen


def _loaded_libraries():
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            fields = (line.split(None, 5) for line in f)
            paths = {parts[5].strip() for parts in fields if len(parts) == 6}
    except OSError:
        return set()
    return {p for p in paths if p.startswith("/") and (LIBRARY_PATTERN.search(os.path.basename(p))
                                                       or MODULE_PATTERN.search(p))}


def _debian_owners(paths):
    """{package: version} of the Debian packages owning paths (dpkg's file lists; Debian only)."""
    if not paths or not os.path.isdir("/var/lib/dpkg/info"):
        return {}
    wanted = set(paths) | {os.path.realpath(p) for p in paths}
    owners = set()
    for listing in glob.glob("/var/lib/dpkg/info/*.list"):
        try:
            with open(listing, encoding="utf-8", errors="replace") as f:
                if any(line.rstrip("\n") in wanted for line in f):
                    owners.add(os.path.basename(listing)[:-5].split(":")[0])
        except OSError:
            continue
    versions = {}
    try:
        with open("/var/lib/dpkg/status", encoding="utf-8", errors="replace") as f:
            for block in f.read().split("\n\n"):
                fields = dict(re.findall(r"^(Package|Version): (.*)$", block, re.M))
                if fields.get("Package") in owners and "Version" in fields:
                    versions[fields["Package"]] = fields["Version"]
    except OSError:
        pass
    return versions


def collect():
    """The `pip` member."""
    lines = [f"{name}={version}" for name, version in sorted(_python_packages().items())]
    lines += [f"deb:{name}={version}"
              for name, version in sorted(_debian_owners(_loaded_libraries()).items())]
    return "".join(line + "\n" for line in lines)
