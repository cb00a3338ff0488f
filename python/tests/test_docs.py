"""docs/python.md shows what the code prints: the example notebook's table, run as the
document says (``python docs/examples/iocost_vrate_sweep.py out.png``), must print every
line the document shows under it, in order (rows left out are allowed: the document
says so); and every Ray or Dask snippet keeps the ``if __name__ == "__main__":`` guard
that their worker processes need."""

import re
import subprocess
import sys

from conftest import ROOT

DOC = ROOT / "docs" / "python.md"
EXAMPLE = "python docs/examples/iocost_vrate_sweep.py out.png"


def shown_after(doc: str, command: str) -> list:
    """The lines of the fenced block that follows the block holding `command`."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", doc, re.S)
    for i, block in enumerate(blocks):
        if command in block:
            return [l.rstrip() for l in blocks[i + 1].splitlines() if l.strip()]
    raise AssertionError(f"docs/python.md shows no `{command}`")


def test_the_example_prints_what_the_document_shows(tmp_path):
    shown = shown_after(DOC.read_text(), EXAMPLE)
    assert len(shown) >= 5
    out = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "examples" / "iocost_vrate_sweep.py"), "out.png"],
        cwd=tmp_path, check=True, capture_output=True, text=True,
    )
    assert (tmp_path / "out.png").stat().st_size > 10_000
    printed = iter(l.rstrip() for l in out.stdout.splitlines())
    for line in shown:
        assert any(p == line for p in printed), (
            f"the example no longer prints, in this order, `{line}`:\n{out.stdout}"
        )


def test_ray_and_dask_snippets_keep_the_main_guard():
    doc = DOC.read_text()
    snippets = [b for b in re.findall(r"```python\n(.*?)```", doc, re.S)
                if 'backend="ray"' in b or 'backend="dask"' in b]
    assert snippets
    for s in snippets:
        assert 'if __name__ == "__main__":' in s, s
