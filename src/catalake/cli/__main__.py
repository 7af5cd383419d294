"""`python -m catalake.cli`: the console script `catalake`."""

import sys

from . import main

sys.exit(main())
