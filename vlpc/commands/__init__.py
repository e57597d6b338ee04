"""The ``vlpc`` subcommands, one module each (``vlpc run``: :mod:`vlpc.commands.run`), above the
library they call (docs/architecture.md, "Import rules")."""
