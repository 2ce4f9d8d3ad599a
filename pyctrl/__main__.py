"""``python -m pyctrl ...``: see :mod:`pyctrl.cli`."""

import sys

from pyctrl.cli import main

if __name__ == "__main__":
    sys.exit(main())
