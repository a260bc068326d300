"""``python -m judgecal.cli``: the command line."""

import sys

from judgecal.cli import main

sys.exit(main())
