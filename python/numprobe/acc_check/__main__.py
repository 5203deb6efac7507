"""python -m numprobe.acc_check acc-check|multi-acc-check ..."""
import sys

from .dispatch import main

sys.exit(main())
