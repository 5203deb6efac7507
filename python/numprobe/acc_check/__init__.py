"""numprobe acc-check: replay the APIs of a dump against a high-precision CPU reference."""
from .cli import main  # noqa: F401
