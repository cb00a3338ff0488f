"""A test that needs something outside the package (the blkcg-sim binary, Ray, Dask)
skips where it is missing, saying so, and fails instead under BLKCG_SIM_REQUIRE_TOOLS=1,
as CI (.ci/run) runs: there a green run means every test really ran. The Rust tests
share the rule (tests/common/mod.rs)."""

import importlib
import os

import pytest

REQUIRE_TOOLS_VAR = "BLKCG_SIM_REQUIRE_TOOLS"


def tools_required_by(value):
    """Whether a value of BLKCG_SIM_REQUIRE_TOOLS asks for the tools: set, not empty, not 0."""
    return value is not None and value not in ("", "0")


def tools_required():
    return tools_required_by(os.environ.get(REQUIRE_TOOLS_VAR))


def missing_tool_outcome(required, missing, install, why):
    """The decision, as a pure function: ("fail", message) or ("skip", message)."""
    if required:
        return ("fail", f"missing: {missing} (needed {why}); install: {install}. "
                        f"{REQUIRE_TOOLS_VAR} is set, so this fails instead of skipping")
    return ("skip", f"missing {missing} (needed {why}); install: {install} "
                    f"({REQUIRE_TOOLS_VAR}=1 makes this a failure)")


def missing_tool(missing, install, why):
    """Skip the test (pytest lists it as skipped, with the reason) or, when the tools are
    required, fail it. Does not return."""
    kind, message = missing_tool_outcome(tools_required(), missing, install, why)
    if kind == "fail":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def import_or_missing(module, install, why):
    """The module, imported; if it cannot be, `missing_tool` (pytest.importorskip, with
    the rule above)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        missing_tool(f"the Python module `{module}`", install, why)
