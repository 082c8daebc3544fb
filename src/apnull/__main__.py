"""``python -m apnull``: the ``apnull`` command."""

import sys

from .cli import main

sys.exit(main())
