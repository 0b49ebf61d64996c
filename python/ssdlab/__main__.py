"""`python -m ssdlab` is the same as the `ssdlab` command."""

from .cli import main

raise SystemExit(main())
