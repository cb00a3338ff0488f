"""blkcg-sim from Python: a deterministic simulator of Linux's cgroup v2 block I/O
control driven by fio jobs against device models.

Controllers and the elevator, each where Linux calls it:

- blk-throttle: ``io.max``
- blk-iocost: ``io.cost.model`` and ``io.cost.qos`` (root), ``io.weight``
- blk-iolatency: ``io.latency``
- blk-ioprio: ``io.prio.class`` (and fio's ``prio``, ``prioclass``, ``cmdprio``)
- mq-deadline: the I/O scheduler (``[device] scheduler = "mq-deadline"``, its
  ``queue/iosched`` files in ``[device.iosched]``)
- bfq: the I/O scheduler with weights (``[device] scheduler = "bfq"``,
  ``io.bfq.weight``, its ``queue/iosched`` files in ``[device.iosched]``)

Device models (``[device] model = ...``): ``nullb`` (null_blk as configured through
configfs), ``ssd`` (simple parallel service, or flash with a translation layer and its
garbage-collection cliff), ``hdd`` (seek, rotation, transfer) and ``cloud`` (a cloud
volume's IOPS and bandwidth token buckets, optional latency tails).

The same engine as the ``blkcg-sim`` command line, as a library: every result is
byte-identical to what the command line prints or writes for the same scenario, seed
and values, and a simulation runs without holding the GIL, so Python threads run
simulations on every core.

- :func:`run` runs one scenario (a path, a built-in name, TOML text or a dict) and
  returns a :class:`Result`: fio's JSON as a dict, the CSV files as DataFrames (each
  parsed when first read; until then its text waits in the library, on disk past
  1 MiB, so a day-long run's result is small), the summary table, the controllers'
  trace.
- :func:`sweep` runs a scenario over a grid of values and seeds (the KEY grammar of
  ``blkcg-sim sweep --set``), in this process or on Ray or Dask, and returns the rows
  of ``blkcg-sim sweep --format csv`` as one DataFrame.
- :func:`check` prepares every variant as ``blkcg-sim check`` does.
- :func:`scenarios` lists the built-in scenarios.

Every refusal raises :class:`ScenarioError` (a ``ValueError``) with the command
line's message: ``file:line``, the key, what is accepted, the kernel's errno. Ctrl-C
stops a :func:`run` or :func:`sweep` under way within a fraction of a second
(``KeyboardInterrupt``).
"""

from __future__ import annotations

import functools
import io
import json
import os
import warnings
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import pandas as pd

from . import _native
from ._native import ScenarioError

__all__ = ["Result", "ScenarioError", "check", "controllers", "run", "scenarios", "sweep"]

#: What names a scenario: a path, a built-in scenario's name, TOML text, or a dict
#: laid out as the TOML file would be.
ScenarioLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]

#: A sweep's grid: each KEY (``blkcg-sim sweep --set`` grammar) with its values, the
#: first key varying slowest; a dict or a sequence of pairs.
Grid = Union[Mapping[str, Any], Sequence[Tuple[str, Any]]]


def _load(scenario: ScenarioLike) -> Tuple[str, str]:
    """The scenario as ``(text, file)``: what every native call and worker takes."""
    if isinstance(scenario, Mapping):
        return _native.load_json(json.dumps(scenario), "<dict>")
    if isinstance(scenario, os.PathLike):
        return _native.load_path(os.fspath(scenario))
    if isinstance(scenario, str):
        return _native.load(scenario)
    raise TypeError(
        f"scenario: expected a path, a built-in name, TOML text or a dict, not {type(scenario).__name__}"
    )


def _value(v: Any) -> str:
    """A value as a scenario would write it (``True`` is TOML's ``true``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _pairs(overrides: Mapping[str, Any]) -> List[Tuple[str, str]]:
    return [(k, _value(v)) for k, v in overrides.items()]


def _grid(grid: Grid) -> List[Tuple[str, List[str]]]:
    items = grid.items() if isinstance(grid, Mapping) else grid
    out = []
    for key, values in items:
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            values = [values]
        out.append((str(key), [_value(v) for v in values]))
    return out


def _frame(csv: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(csv))


class _TableFile(io.RawIOBase):
    """Table ``name``'s CSV text as a binary file, read from the library's spool a
    range of bytes at a time (never whole)."""

    def __init__(self, out: "_native.RunOutput", name: str) -> None:
        super().__init__()
        self._out, self._name, self._pos = out, name, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self._out.read(self._name, self._pos, len(b))
        n = len(data)
        b[:n] = data
        self._pos += n
        return n


def _open(out: "_native.RunOutput", name: str) -> io.BufferedReader:
    out.read(name, 0, 0)  # ValueError now if there is no such table
    return io.BufferedReader(_TableFile(out, name), 1 << 16)


class _Held:
    """A run's outputs held in Python, read as :class:`_native.RunOutput` is: what an
    unpickled :class:`Result` reads from (pickling reads every table and the trace
    out of the library)."""

    def __init__(self, state: Dict[str, Any]) -> None:
        self.fio_json: str = state["fio_json"]
        self.summary: str = state["summary"]
        self.io_stat: str = state["io_stat"]
        self.io_pressure: str = state["io_pressure"]
        self.warnings: List[str] = state["warnings"]
        self.trace: List[str] = state["trace"]
        self._csv: Dict[str, bytes] = state["csv"]
        self.tables: List[str] = list(self._csv)

    def csv(self, name: str) -> str:
        return self._text(name).decode()

    def read(self, name: str, pos: int, size: int) -> bytes:
        return self._text(name)[pos : pos + size]

    def _text(self, name: str) -> bytes:
        if name not in self._csv:
            raise ValueError(f"{name}: no such table; one of {', '.join(self.tables)}")
        return self._csv[name]


def _unpickle(state: Dict[str, Any]) -> "Result":
    return Result(_Held(state))  # type: ignore[arg-type]


class _Tables(Mapping[str, pd.DataFrame]):
    """Every CSV table of a run by name, each parsed into a DataFrame when first read
    (then kept): the names cost nothing, a table costs its DataFrame."""

    def __init__(self, out: "_native.RunOutput") -> None:
        self._out = out
        self._names: List[str] = list(out.tables)
        self._frames: Dict[str, pd.DataFrame] = {}

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in self._frames:
            if name not in self._names:
                raise KeyError(name)
            with _open(self._out, name) as f:
                self._frames[name] = pd.read_csv(f)
        return self._frames[name]

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        read = [n for n in self._names if n in self._frames]
        return f"<tables {', '.join(self._names)} ({len(read)} read: {', '.join(read) or 'none'})>"


class Result:
    """Everything one run produced, as the files of ``blkcg-sim run --output`` hold it.

    Attributes:
        fio: fio's JSON document (``fio.json``) as a dict.
        summary: the summary table (``summary.txt``), ending with the device line of
            an FTL drive (its write amplification).
        io_stat: ``io.stat`` of every cgroup that did I/O.
        io_pressure: ``io.pressure`` of every cgroup at the end (the root's first).
        trace: the controllers' event log, one line each (``trace=True``; read when
            first asked for).
        warnings: what ``blkcg-sim run`` prints as warnings.
        tables: every CSV table by name, as a DataFrame parsed when first read (then
            kept): ``jobs``, ``iostat``, then each controller's timeline, whether or not
            the run used it (empty then): ``throttle`` (blk-throttle), ``timeline``
            (blk-iocost), ``iolatency`` (blk-iolatency), ``wbt`` (writeback
            throttling's windows), ``deadline`` (mq-deadline), ``bfq`` (BFQ), then
            ``writeback`` (the page cache, with buffered writers) and ``pressure``
            (every cgroup's io.pressure, every 2 s).
            Until read, a table's text waits in the library (memory up to 1 MiB, then an
            unlinked temporary file); :meth:`open` reads it as a file instead.
        jobs, timeline, iostat, throttle: four of them, as properties (below).
    """

    def __init__(self, out: "_native.RunOutput") -> None:
        self._out = out
        self.fio: Dict[str, Any] = json.loads(out.fio_json)
        self.summary: str = out.summary
        self.io_stat: str = out.io_stat
        self.io_pressure: str = out.io_pressure
        self.warnings: List[str] = list(out.warnings)
        self.tables: Mapping[str, pd.DataFrame] = _Tables(out)

    @functools.cached_property
    def trace(self) -> List[str]:
        """The controllers' event log (``trace.txt``), one line each (``trace=True``)."""
        return list(self._out.trace)

    @property
    def jobs(self) -> pd.DataFrame:
        """``jobs.csv``: each job's I/Os, IOPS and mean latency per time bin."""
        return self.tables["jobs"]

    @property
    def timeline(self) -> pd.DataFrame:
        """``timeline.csv``: blk-iocost's periods, one row per cgroup (empty without it)."""
        return self.tables["timeline"]

    @property
    def iostat(self) -> pd.DataFrame:
        """``iostat.csv``: the device each second, as ``iostat -x 1`` shows it."""
        return self.tables["iostat"]

    @property
    def throttle(self) -> pd.DataFrame:
        """``throttle.csv``: blk-throttle's slices and queues (empty without it)."""
        return self.tables["throttle"]

    def csv(self, name: str) -> str:
        """The text of CSV table ``name`` (one of :attr:`tables`), byte for byte the
        file ``blkcg-sim run --output`` writes."""
        return self._out.csv(name)

    def open(self, name: str) -> io.BufferedReader:
        """CSV table ``name`` as a binary file, read from the library a piece at a time:
        what reads a long run's table in bounded memory, e.g.
        ``pd.read_csv(r.open("timeline"), usecols=["t_s", "cgroup", "hweight_inuse"])`` or
        ``pd.read_csv(r.open("timeline"), chunksize=100_000)``."""
        return _open(self._out, name)

    def __reduce__(self) -> Any:
        """Pickles whole — every table's text and the trace come out of the library —
        so a result crosses processes (``multiprocessing``, Ray, Dask) and unpickles
        without it."""
        state = {
            "fio_json": self._out.fio_json,
            "summary": self.summary,
            "io_stat": self.io_stat,
            "io_pressure": self.io_pressure,
            "warnings": list(self.warnings),
            "trace": list(self.trace),
            "csv": {n: self._out.csv(n).encode() for n in self._out.tables},
        }
        return (_unpickle, (state,))

    def __repr__(self) -> str:
        return f"<blkcg_sim.Result: {len(self.fio.get('jobs', []))} fio job(s)>"


def run(
    scenario: ScenarioLike,
    variant: Optional[str] = None,
    kernel: Optional[str] = None,
    seed: Optional[int] = None,
    trace: bool = False,
    **overrides: Any,
) -> Result:
    """Run one variant of a scenario, as ``blkcg-sim run SCENARIO --variant V``.

    Args:
        scenario: a path, a built-in scenario's name (see :func:`scenarios`), TOML
            text, or a dict laid out as the TOML file.
        variant: which ``[[variant]]`` to run; required when the scenario has any.
        kernel: a kernel version preset (``"6.10"``), as ``run --kernel``.
        seed: the seed, instead of the scenario's.
        trace: keep the controllers' event log in :attr:`Result.trace`.
        **overrides: values written into the scenario, keyed as ``blkcg-sim sweep
            --set`` keys; keys that are not Python names go in a dict:
            ``run(sc, **{"root.io.cost.qos:max": 150})``.

    Raises:
        ScenarioError: a scenario, key or value the command line refuses.
    """
    text, file = _load(scenario)
    out = _native.run(text, file, variant, kernel, seed, _pairs(overrides), trace)
    return Result(out)


def check(
    scenario: ScenarioLike, variant: Optional[str] = None, **overrides: Any
) -> Dict[str, List[str]]:
    """Prepare every variant (or ``variant``) as ``blkcg-sim check`` does, refusing
    exactly what :func:`run` refuses; returns each variant's warnings as ``blkcg-sim
    check`` lists them — the defaults no distribution ships (a scenario without
    ``[kernel]``), then the run's — (``"(base)"`` for a scenario without variants).

    Raises:
        ScenarioError: the first refusal, with ``file:line``.
    """
    text, file = _load(scenario)
    return dict(_native.check(text, file, variant, _pairs(overrides)))


def scenarios() -> Dict[str, str]:
    """The built-in scenarios: name → the first line of its description (as `blkcg-sim scenarios`)."""
    return dict(_native.scenarios())


def controllers() -> List[Dict[str, Any]]:
    """Every controller the simulator has — blk-cgroup policies, rq-qos entries and
    elevators — as its registry describes it: ``name``, ``kind`` (``bio``, ``rq-qos``,
    ``elevator``), ``files`` (each with ``name``, ``on_root``, ``on_children``,
    ``tokens`` and an accepted ``example`` line, ``MAJ:MIN`` for the disk), ``switches``
    (the ``[kernel]`` switch prefix), ``attributes`` (an elevator's ``queue/iosched/``
    files), ``tables`` (its names in :attr:`Result.tables`) and ``kconfig``."""
    return json.loads(_native.controllers_json())


def sweep(
    scenario: ScenarioLike,
    grid: Grid,
    seeds: int = 1,
    workers: Optional[int] = None,
    backend: Optional[str] = None,
    address: Optional[str] = None,
    chunk: Optional[int] = None,
) -> pd.DataFrame:
    """Run a scenario over the cartesian product of ``grid``'s values and ``seeds``
    seeds: the rows of ``blkcg-sim sweep SCENARIO --set KEY=V1,V2 ... --seeds N
    --format csv`` (one per job of each run: point, seed, the values, the job's
    figures, the run's totals) as one DataFrame.

    Run ``r`` is point ``r // seeds`` with seed ``scenario seed + r % seeds``; the
    first key varies slowest; a scenario with variants sweeps them all unless the
    grid has a ``variant`` key. The runs are enumerated natively, so the rows are the
    same whatever runs them.

    Args:
        grid: each KEY with its values (a scalar is one value).
        seeds: seeds per point.
        workers: threads (in-process), Dask workers of a local cluster, or Ray tasks
            under way; default: the machine's cores.
        backend: ``None`` (threads in this process), ``"ray"`` or ``"dask"``.
        address: the Ray or Dask cluster to use (default: a running Ray / the current
            Dask client, else a local cluster).
        chunk: runs per Ray task or Dask future (default: about four per worker).

    Warns:
        UserWarning: a ``[[schedule]]`` entry rewrites a swept line mid-run (the rows
            name the value set at 0 s), as ``blkcg-sim sweep`` warns on stderr.

    Raises:
        ScenarioError: a bad key or value, before anything runs; a run's error.
    """
    from . import _backends

    text, file = _load(scenario)
    pairs = _grid(grid)
    runs, header, planned = _native.sweep_plan(text, file, pairs, seeds)
    for w in planned:
        warnings.warn(w, stacklevel=2)
    rows = _backends.rows(backend, (text, file, pairs, seeds), runs, workers, address, chunk)
    return _frame(header + rows)
