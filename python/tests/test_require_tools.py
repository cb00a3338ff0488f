"""The rule every test needing an outside tool follows (require_tools.py): a skip that
says why locally, a failure naming what is missing under BLKCG_SIM_REQUIRE_TOOLS=1."""

import os
import subprocess
import sys
import textwrap

import pytest

from require_tools import REQUIRE_TOOLS_VAR, missing_tool_outcome, tools_required_by


def test_the_variable_asks_for_the_tools_when_set_and_not_0():
    assert not tools_required_by(None)
    assert not tools_required_by("")
    assert not tools_required_by("0")
    assert tools_required_by("1")


def test_required_and_missing_is_a_failure_naming_the_tool():
    kind, message = missing_tool_outcome(True, "the Python module `ray`", "pip install ray", "to sweep")
    assert kind == "fail"
    for w in ("`ray`", "pip install ray", "to sweep", REQUIRE_TOOLS_VAR):
        assert w in message


def test_not_required_and_missing_is_a_skip_that_says_why():
    kind, message = missing_tool_outcome(False, "the binary", "cargo build --release", "to compare")
    assert kind == "skip"
    assert "the binary" in message and "cargo build --release" in message
    assert f"{REQUIRE_TOOLS_VAR}=1" in message


@pytest.mark.parametrize("required", [True, False])
def test_the_variable_turns_a_skip_into_a_failure(tmp_path, required):
    """End to end, in a child pytest, so this process's environment is never written."""
    (tmp_path / "test_probe.py").write_text(textwrap.dedent("""
        from require_tools import import_or_missing

        def test_probe():
            import_or_missing("blkcg_sim_no_such_module_0b5e", "pip install nothing", "by the probe")
    """))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__))
    env.pop(REQUIRE_TOOLS_VAR, None)
    if required:
        env[REQUIRE_TOOLS_VAR] = "1"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )
    text = out.stdout + out.stderr
    if required:
        assert out.returncode == 1, text
        assert "missing: the Python module `blkcg_sim_no_such_module_0b5e`" in text, text
    else:
        assert out.returncode == 0, text
        assert "1 skipped" in text and "blkcg_sim_no_such_module_0b5e" in text, text
