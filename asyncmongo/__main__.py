"""``python -m asyncmongo``: see :mod:`asyncmongo.cli`."""

import sys

from asyncmongo.cli import main

sys.exit(main())
