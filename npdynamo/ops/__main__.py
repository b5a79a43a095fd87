"""``python -m npdynamo.ops [docs/capture.md]``: regenerate the table of captured names."""

import sys

from npdynamo.ops.table import main

raise SystemExit(main(sys.argv[1:]))
