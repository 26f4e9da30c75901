import sys

from hpcgym.cli import main

sys.exit(main())
