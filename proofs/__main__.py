import sys

from proofs.cli import main

sys.exit(main())
