import sys

from vramlens.cli import main

sys.exit(main())
