"""``python -m app.cli``: the command line (also ``robust-studio COMMAND``)."""
import sys

from . import main

sys.exit(main())
