"""python -m numprobe.config_check config-check -d ... | -c golden.zip target.zip -o out/"""
import sys

from .cli import main

sys.exit(main())
