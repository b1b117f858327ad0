"""``python -m constrain_api`` is the ``constrain`` command."""

from .cli import main

raise SystemExit(main())
