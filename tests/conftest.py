"""Fixtures shared by the test modules.

`qgcc` and `qgrun` run the two command lines in-process (click's CliRunner), the way
a user runs them, so a test sees the exit code and both output streams.  Exceptions
are not caught: a crash inside a command fails the test with its traceback instead of
hiding in `result.exception`.  They are session-scoped because they hold no state.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner


@pytest.fixture(scope="session")
def qgcc():
    from qgcc.cli.qgcc_cmd import main

    return lambda *args: CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="session")
def qgrun():
    from qgcc.cli.qgrun_cmd import main

    return lambda *args: CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
