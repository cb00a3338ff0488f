"""Where a sweep's runs are computed: threads in this process, Ray tasks or Dask
futures. Each unit of work is a contiguous slice of the runs, computed by the native
module (:func:`_native.sweep_rows`) from the scenario's text; the slices' CSV rows are
joined in run order, so every backend gives the same rows as the command line."""

from __future__ import annotations

from typing import List, Optional, Tuple

from . import _native

#: The plan every worker gets: (scenario text, its file name, grid, seeds).
Plan = Tuple[str, str, List[Tuple[str, List[str]]], int]


def _slice(plan: Plan, start: int, end: int) -> str:
    """Runs ``start..end`` of the sweep on one thread: the unit a worker computes."""
    text, file, grid, seeds = plan
    return _native.sweep_rows(text, file, grid, seeds, start, end, 1)


def _slices(runs: int, parts: int, chunk: Optional[int]) -> List[Tuple[int, int]]:
    size = chunk or max(1, -(-runs // (4 * parts)))
    return [(s, min(s + size, runs)) for s in range(0, runs, size)]


def rows(
    backend: Optional[str],
    plan: Plan,
    runs: int,
    workers: Optional[int],
    address: Optional[str],
    chunk: Optional[int],
) -> str:
    """The CSV rows of every run of ``plan``, in run order."""
    if workers is not None and workers < 1:
        raise ValueError(f"workers={workers}: at least one")
    if chunk is not None and chunk < 1:
        raise ValueError(f"chunk={chunk}: at least one run per task")
    if backend is None:
        if address is not None:
            raise ValueError("address= is for backend='ray' or 'dask'")
        text, file, grid, seeds = plan
        return _native.sweep_rows(text, file, grid, seeds, 0, runs, workers or _native.cores())
    if backend == "ray":
        return _ray(plan, runs, workers, address, chunk)
    if backend == "dask":
        return _dask(plan, runs, workers, address, chunk)
    raise ValueError(f"backend={backend!r}: None, 'ray' or 'dask'")


def _ray(plan: Plan, runs: int, workers: Optional[int], address: Optional[str], chunk: Optional[int]) -> str:
    import ray

    if not ray.is_initialized():
        # a local Ray when no address is given; it stays up for the next sweep
        ray.init(address=address, num_cpus=workers if address is None else None,
                 include_dashboard=False, logging_level="ERROR")
    task = ray.remote(num_cpus=1)(_slice)
    plan_ref = ray.put(plan)
    parts = workers or int(ray.cluster_resources().get("CPU", 1))
    refs = [task.remote(plan_ref, s, e) for s, e in _slices(runs, parts, chunk)]
    return "".join(ray.get(refs))


def _dask(plan: Plan, runs: int, workers: Optional[int], address: Optional[str], chunk: Optional[int]) -> str:
    from dask.distributed import Client, LocalCluster

    own = None
    if address is not None:
        client = own = Client(address)
    else:
        try:
            from dask.distributed import default_client

            client = default_client()
        except ValueError:
            # no client: a local cluster of single-threaded worker processes
            cluster = LocalCluster(n_workers=workers or _native.cores(), threads_per_worker=1,
                                   dashboard_address=None)
            client = own = Client(cluster)
    try:
        parts = workers or max(1, len(client.scheduler_info()["workers"]))
        slices = _slices(runs, parts, chunk)
        [plan_future] = client.scatter([plan], broadcast=True)
        futures = client.map(_slice, [plan_future] * len(slices), [s for s, _ in slices],
                             [e for _, e in slices])
        return "".join(client.gather(futures))
    finally:
        if own is not None:
            cluster = own.cluster
            own.close()
            if cluster is not None and address is None:
                cluster.close()
