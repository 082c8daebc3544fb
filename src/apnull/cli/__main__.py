"""``python -m apnull.cli``: the ``apnull`` command."""

import sys

from . import main

sys.exit(main())
