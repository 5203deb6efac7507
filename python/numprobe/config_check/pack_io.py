"""A config_check pack is a zip of JSON/text members under msprobe's names (docs/config_check.md):
``env``, ``pip``, ``hyperparameters/hyperparameters_{static,dynamic}.json``,
``weights/step{N}/rank{R}/weight.json``, ``dataset/step{N}/rank{R}/dataset.json``,
``random/rank{R}.json``. Writing is atomic (a temporary file renamed over the target). Packs are
read by the compare in C++ (src/config_check/pack_zip.cc)."""
import os
import tempfile
import zipfile

class PackError(Exception):
    """An unreadable pack or input file: the message names the file and the reason."""


def write_pack(path, members):
    """Writes {member name: str | bytes} to the zip at path, atomically."""
    path = os.path.abspath(path)
    if not path.endswith(".zip"):
        raise PackError(f"{path}: a config_check pack must be a .zip file")
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".config_check_", suffix=".zip.tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
            for name in sorted(members):
                data = members[name]
                z.writestr(name, data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
