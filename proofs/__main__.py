"""``python -m proofs report`` and friends: see proofs.cli."""
import sys

from proofs.cli import main

if __name__ == "__main__":  # not when a worker process re-imports the main module
    sys.exit(main())
