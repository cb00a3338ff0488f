"""Type stubs of ``blkcg_sim._native``, the Rust module (``python/src/lib.rs``)."""

from typing import List, Optional, Tuple

class ScenarioError(ValueError):
    """A scenario, key or value blkcg-sim refuses; the message is the command line's,
    with ``file:line`` where the problem is written."""

class RunOutput:
    """One run's outputs, as :class:`blkcg_sim.Result` reads them; its tables and
    trace stay in the library's spools until read."""

    @property
    def fio_json(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def tables(self) -> List[str]:
        """The CSV tables' names (``jobs``, ``iostat``, then each controller's)."""
    def csv(self, name: str) -> str:
        """Table ``name``'s CSV text, whole (``ValueError``: no such table)."""
    def read(self, name: str, pos: int, size: int) -> bytes:
        """Up to ``size`` bytes of table ``name``'s CSV text from byte ``pos``."""
    @property
    def io_stat(self) -> str: ...
    @property
    def trace(self) -> List[str]:
        """The event log's lines, read back."""
    @property
    def warnings(self) -> List[str]: ...

def load(spec: str) -> Tuple[str, str]:
    """A path, a built-in name or TOML text as ``(text, file)``."""

def load_path(path: str) -> Tuple[str, str]:
    """The scenario file at ``path`` as ``(text, file)``."""

def load_json(json: str, file: str) -> Tuple[str, str]:
    """A scenario as JSON text as ``(toml_text, file)``."""

def run(
    text: str,
    file: str,
    variant: Optional[str],
    kernel: Optional[str],
    seed: Optional[int],
    overrides: List[Tuple[str, str]],
    trace: bool,
) -> RunOutput:
    """Run one variant with overrides (the GIL is released while it simulates;
    Ctrl-C stops it with ``KeyboardInterrupt``)."""

def check(
    text: str, file: str, variant: Optional[str], overrides: List[Tuple[str, str]]
) -> List[Tuple[str, List[str]]]:
    """Each variant prepared as ``blkcg-sim check`` does: its warnings."""

def sweep_plan(
    text: str, file: str, grid: List[Tuple[str, List[str]]], seeds: int
) -> Tuple[int, str]:
    """``(runs, csv_header)`` of a sweep; every key and value is checked (once per
    process: the checked plan is kept for the sweep's slices)."""

def sweep_rows(
    text: str,
    file: str,
    grid: List[Tuple[str, List[str]]],
    seeds: int,
    start: int,
    end: int,
    workers: int,
) -> str:
    """The CSV rows of runs ``start..end``, in run order, on ``workers`` threads; the
    plan is checked at the process's first slice (or its ``sweep_plan``) and reused.
    Ctrl-C stops it with ``KeyboardInterrupt``."""

def scenarios() -> List[Tuple[str, str]]:
    """The built-in scenarios: ``(name, description)``."""

def cores() -> int:
    """The cores of this machine."""

def controllers_json() -> str:
    """Every controller the simulator has, as JSON (``blkcg_sim.controllers``)."""
