"""The golden side of `make demo`'s locate run: examples/python/locate_demo.py without a fault."""
import locate_demo

if __name__ == "__main__":
    locate_demo.main(default_fault="")
