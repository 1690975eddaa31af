"""``python -m zfabric.cli``."""

import sys

from . import main

sys.exit(main())
