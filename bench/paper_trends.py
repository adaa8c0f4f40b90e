"""The papers' load-balancing trends rerun on the simulator: claim, figure, agree/disagree.

Run: python bench/paper_trends.py [--quick] [--device D] [--json PATH] [--only NAMES]
(the same as ``warpsweep bench trends``; the logic is in tuner/paper_trends.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

# this checkout's packages, whether or not (and wherever) `pip install -e .` pointed
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tuner.paper_trends import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
