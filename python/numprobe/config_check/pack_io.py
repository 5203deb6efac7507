"""A config_check pack is a zip of JSON/text members under msprobe's names (docs/config_check.md):
``env``, ``pip``, ``hyperparameters/hyperparameters_{static,dynamic}.json``,
``weights/step{N}/rank{R}/weight.json``, ``dataset/step{N}/rank{R}/dataset.json``,
``random/rank{R}.json``. Writing is atomic (a temporary file renamed over the target); reading
checks every member before any compare starts, so a bad pack fails with its file and member named."""
import json
import os
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


class Pack:
    """The members of one pack, read in full: name -> bytes."""

    def __init__(self, path):
        self.path = str(path)
        if not os.path.isfile(self.path):
            raise PackError(f"{self.path}: no such pack file")
        try:
            with zipfile.ZipFile(self.path) as z:
                self.members = {}
                for info in z.infolist():
                    if info.is_dir():
                        continue
                    if info.file_size > MAX_MEMBER_BYTES:
                        raise PackError(f"{self.path}: member {info.filename} is {info.file_size} "
                                        f"bytes, over the {MAX_MEMBER_BYTES}-byte limit")
                    self.members[info.filename.replace("\\", "/")] = z.read(info)
        except PackError:
            raise
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
                NotImplementedError, RuntimeError) as e:
            raise PackError(f"{self.path}: not a readable config_check pack (zip): {e}") from e
        if not self.members:
            raise PackError(f"{self.path}: the pack is empty (no member)")

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
