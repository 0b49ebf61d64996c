"""`python -m ssdlab` is the same as the `ssdlab` command."""

try:
    from .cli import main
except KeyboardInterrupt:
    # Ctrl-C while the package loads: the quiet exit of an interrupted command.
    import sys

    sys.stderr.write("interrupted\n")
    raise SystemExit(130) from None

raise SystemExit(main())
