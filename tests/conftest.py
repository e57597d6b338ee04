"""Test-session settings.

The repository keeps the driver in ./vlpc while dialects/, passes/ and runtime/
install into the vlpc package; a Python started with the repository root as its
working directory would find ./vlpc first and miss vlpc.dialects.  Subprocesses the
tests start therefore run with PYTHONSAFEPATH=1 (no current directory on sys.path),
so they use the installed package, as a user's would.
"""

import os

os.environ["PYTHONSAFEPATH"] = "1"
