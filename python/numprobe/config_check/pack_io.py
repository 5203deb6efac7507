"""A config_check pack is a zip of JSON/text members under msprobe's names (docs/config_check.md):
``env``, ``pip``, ``hyperparameters/hyperparameters_{static,dynamic}.json``,
``weights/step{N}/rank{R}/weight.json``, ``dataset/step{N}/rank{R}/dataset.json``,
``random/rank{R}.json``. Writing is atomic (a temporary file renamed over the target); reading
checks every member before any compare starts, so a bad pack fails with its file and member named."""
import json
import os
import re
import tempfile
import zipfile

MAX_MEMBER_BYTES = 1 << 30  # a member larger than this is refused (zip bombs)


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


def _read_zip(path):
    members = {}
    try:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if info.is_dir():
                    continue
                if info.file_size > MAX_MEMBER_BYTES:
                    raise PackError(f"{path}: member {info.filename} is {info.file_size} bytes, "
                                    f"over the {MAX_MEMBER_BYTES}-byte limit")
                members[info.filename.replace("\\", "/")] = z.read(info)
    except PackError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
            NotImplementedError, RuntimeError) as e:
        raise PackError(f"{path}: not a readable config_check pack (zip): {e}") from e
    if not members:
        raise PackError(f"{path}: the pack is empty (no member)")
    return members


def rank_packs(path):
    """The packs the other ranks of a job wrote beside path (`pack_rank{R}.zip`, ConfigChecker)."""
    directory, name = os.path.split(os.path.abspath(path))
    pattern = re.compile(re.escape(name[:-4]) + r"_rank(\d+)\.zip$") if name.endswith(".zip") else None
    if pattern is None or not os.path.isdir(directory):
        return []
    found = [(int(m.group(1)), f) for f in os.listdir(directory) for m in [pattern.match(f)] if m]
    return [os.path.join(directory, f) for _, f in sorted(found)]


class Pack:
    """The members of one pack, read in full: name -> bytes. The per-rank packs of the same job
    beside it (`pack_rank1.zip`, ...) are read with it: their members never collide with rank 0's
    (each names its rank), and a collision is an error."""

    def __init__(self, path):
        self.path = str(path)
        if not os.path.isfile(self.path):
            raise PackError(f"{self.path}: no such pack file")
        self.members = _read_zip(self.path)
        for other in rank_packs(self.path):
            for name, data in _read_zip(other).items():
                if name in self.members:
                    raise PackError(f"{other}: member {name} is also in {self.path}")
                self.members[name] = data

    def has(self, name):
        return name in self.members

    def names_under(self, prefix):
        return sorted(n for n in self.members if n.startswith(prefix + "/"))

    def text(self, name):
        try:
            return self.members[name].decode("utf-8")
        except UnicodeDecodeError as e:
            raise PackError(f"{self.path}: member {name} is not UTF-8 text ({e})") from e

    def json(self, name, kind=dict):
        try:
            value = json.loads(self.text(name))
        except json.JSONDecodeError as e:
            raise PackError(f"{self.path}: member {name} is not valid JSON ({e})") from e
        if not isinstance(value, kind):
            raise PackError(f"{self.path}: member {name} holds a JSON {type(value).__name__}, "
                            f"expected a {kind.__name__}")
        return value
