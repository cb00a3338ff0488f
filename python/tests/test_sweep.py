"""sweep: the command line's rows, whatever runs them (threads, Ray, Dask)."""

import io
import subprocess

import pandas as pd
import pytest

import blkcg_sim
from require_tools import import_or_missing

GRID = {"cgroup.a.io.max:riops": [100, 200, 400], "cgroup.b.fio:iodepth": [1, 4]}


@pytest.fixture(scope="module")
def reference(small):
    """The in-process sweep: 2 variants × 3 × 2 points × 2 seeds = 24 runs."""
    return blkcg_sim.sweep(small, GRID, seeds=2, workers=2)


def test_rows_are_the_command_lines(cli, tmp_path, small, reference):
    sc = tmp_path / "small.toml"
    sc.write_text(small)
    args = [cli, "sweep", str(sc), "--seeds", "2", "--format", "csv", "--jobs", "2"]
    for key, values in GRID.items():
        args += ["--set", f"{key}={','.join(map(str, values))}"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    pd.testing.assert_frame_equal(reference, pd.read_csv(io.StringIO(out)))


def test_shape_order_and_figures(reference):
    assert list(reference.columns[:5]) == ["point", "seed", "variant", "cgroup.a.io.max:riops", "cgroup.b.fio:iodepth"]
    assert len(reference) == 24 * 2  # a row per job
    assert list(reference["point"].drop_duplicates()) == list(range(12))
    assert set(reference["seed"]) == {7, 8}
    a = reference[(reference["job"] == "a") & (reference["variant"] == "one")]
    for riops in (100, 200, 400):
        got = a[a["cgroup.a.io.max:riops"] == riops]["iops"]
        assert got.between(0.9 * riops, 1.1 * riops).all(), riops


def test_worker_count_changes_nothing(small, reference):
    pd.testing.assert_frame_equal(blkcg_sim.sweep(small, GRID, seeds=2, workers=1), reference)


def test_ray_local_cluster_gives_the_same_rows(small, reference):
    ray = import_or_missing("ray", "pip install ray", "to sweep on a local Ray cluster")
    try:
        got = blkcg_sim.sweep(small, GRID, seeds=2, workers=2, backend="ray", chunk=5)
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(got, reference)


def test_dask_local_cluster_gives_the_same_rows(small, reference):
    import_or_missing("dask.distributed", "pip install 'dask[distributed]'", "to sweep on a local Dask cluster")
    got = blkcg_sim.sweep(small, GRID, seeds=2, workers=2, backend="dask", chunk=7)
    pd.testing.assert_frame_equal(got, reference)


def test_bad_grids_are_refused_before_anything_runs(small):
    with pytest.raises(blkcg_sim.ScenarioError, match=r"--set cgroup\.a\.io\.max:riops=-1"):
        blkcg_sim.sweep(small, {"cgroup.a.io.max:riops": [100, -1]})
    with pytest.raises(blkcg_sim.ScenarioError, match="no variant `three`"):
        blkcg_sim.sweep(small, {"variant": ["one", "three"]})
    with pytest.raises(blkcg_sim.ScenarioError, match="--seeds 0"):
        blkcg_sim.sweep(small, {}, seeds=0)
    with pytest.raises(ValueError, match="backend="):
        blkcg_sim.sweep(small, {"variant": "one"}, backend="spark")
    with pytest.raises(ValueError, match="chunk=0"):
        blkcg_sim.sweep(small, {"variant": "one"}, backend="dask", chunk=0)
    with pytest.raises(ValueError, match="workers=0"):
        blkcg_sim.sweep(small, {"variant": "one"}, workers=0)


def test_a_schedule_rewriting_a_swept_line_warns(small):
    """As `blkcg-sim sweep` warns on stderr: the rows name the value set at 0 s."""
    text = small + '[[schedule]]\nat = "0.5s"\ncgroup = "a"\n"io.max" = "252:0 riops=50"\n'
    with pytest.warns(UserWarning, match=r"--set cgroup\.a\.io\.max:riops: the \[\[schedule\]\] entry at 0\.500 s"):
        blkcg_sim.sweep(text, {"variant": "one", "cgroup.a.io.max:riops": [100, 200]})
