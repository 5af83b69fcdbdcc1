"""``python -m igestbench`` is the same as ``sv7``."""

import sys

from igestbench.cli import main

sys.exit(main())
