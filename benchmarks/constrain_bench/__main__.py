"""``python -m constrain_bench``: see :mod:`constrain_bench.cli`."""

from .cli import main

raise SystemExit(main())
