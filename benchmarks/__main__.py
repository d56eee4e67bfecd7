"""``python -m benchmarks``: see :mod:`benchmarks.compare`."""

from .compare import main

main()
