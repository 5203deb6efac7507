"""python -m numprobe.acc_check acc-check|multi-acc-check ..."""
import sys

from .cli import main

sys.exit(main())
