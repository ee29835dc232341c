"""``python -m dmlgraph``: the ``dmlgraph`` command, where its script is not on the PATH
(a virtual environment not activated, a user install)."""

import sys

from dmlgraph.cli import main

sys.exit(main())
