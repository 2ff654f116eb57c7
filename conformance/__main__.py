"""``python -m mcpcore.conformance``: the same as ``mcpcore conformance``."""

from mcpcore.conformance.cli import main

raise SystemExit(main())
