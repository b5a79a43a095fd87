"""``python -m npdynamo.ops [README.md]``: regenerate the README's table of captured names."""

import sys

from npdynamo.ops.table import main

raise SystemExit(main(sys.argv[1:]))
