"""CLI subcommands: one module per command family, each with `register(subparsers)` (see cli.py)."""
