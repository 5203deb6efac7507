"""The target side of `make demo`'s locate run: examples/python/locate_demo.py with its layer
norm eps wrong in block 1 (docs/locate.md walks through what locate finds)."""
import locate_demo

if __name__ == "__main__":
    locate_demo.main(default_fault="ln_eps")
