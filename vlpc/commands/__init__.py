"""The ``vlpc`` subcommands, one module each (``compile``, ``opt``, ``run``, ``profile``, ``bench``,
``report``, ``doctor``, ``tune``, ``cache``).

Every module exposes ``add_parser(subparsers)``, which adds its subcommand's parser to the
top-level ``vlpc`` parser (:func:`vlpc.cli.build_parser`), and ``main(args) -> int``, which runs
it on the parsed arguments and returns the exit code (errors are raised as
:class:`vlpc.errors.VlpcError`; :func:`vlpc.cli.main` prints them as one line).  A command module
parses options and formats output; the work is the library's (``vlpc.compiler``, ``vlpc.api``,
``vlpc.bench``, ``vlpc.report``, ``vlpc.tune``, ...).  Nothing in the library imports this package.
"""
