"""``python -m tuner.cli ...``: the ``warpsweep`` command without the console script."""

import sys

from tuner.cli import main

sys.exit(main())
