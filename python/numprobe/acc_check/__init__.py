"""numprobe acc-check: replay the APIs of a dump against a high-precision CPU reference."""


def main(argv=None):
    """Runs acc-check on torch, or on MindSpore for a MindSpore dump (dispatch.py); importing the
    package imports neither."""
    from .dispatch import main as run
    return run(argv)
