"""``python -m tallyboard``: the command line (see :mod:`tallyboard.cli`)."""

import sys

from tallyboard.cli import main

if __name__ == "__main__":
    sys.exit(main())
