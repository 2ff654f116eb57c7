"""``python -m mcpcore``: the ``mcpcore`` command (see ``mcpcore.cli``)."""

from mcpcore.cli import main

raise SystemExit(main())
