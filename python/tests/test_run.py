"""run / check / scenarios: the library gives what the command line gives."""

import io
import json
import subprocess
import threading

import pandas as pd
import pytest

import blkcg_sim

TABLES = ("jobs", "timeline", "iostat", "throttle")


def test_run_is_the_command_lines_run(cli, tmp_path, small):
    sc = tmp_path / "small.toml"
    sc.write_text(small)
    out = tmp_path / "out"
    subprocess.run(
        [cli, "run", str(sc), "--variant", "two", "--output", str(out), "--output-format", "summary"],
        check=True, capture_output=True,
    )
    r = blkcg_sim.run(sc, variant="two")
    folder = out / "two"
    assert r.fio == json.loads((folder / "fio.json").read_text())
    assert r.summary == (folder / "summary.txt").read_text()
    assert r.io_stat == (folder / "io.stat").read_text()
    assert r.io_pressure == (folder / "io.pressure").read_text()
    for name in TABLES:
        f = folder / f"{name}.csv"
        assert f.exists(), name  # this scenario fills every table
        assert r.csv(name) == f.read_text(), name
        header = f.read_text().splitlines()[0].split(",")
        df = getattr(r, name)
        assert list(df.columns) == header, name
        assert len(df) == len(f.read_text().splitlines()) - 1, name


def test_summary_is_what_run_prints_with_the_device_line(cli):
    # an FTL drive: the summary ends with its write amplification, as `run` prints it
    printed = subprocess.run(
        [cli, "run", "example-ssd-write-cliff", "--variant", "unbounded", "--quiet",
         "--output-format", "summary"],
        check=True, capture_output=True, text=True,
    ).stdout
    r = blkcg_sim.run("example-ssd-write-cliff", variant="unbounded")
    assert printed == "--- unbounded ---\n" + r.summary
    assert r.summary.splitlines()[-1].startswith("device nvme0n1: write amplification ")


def test_tables_have_the_csv_columns_even_when_empty():
    r = blkcg_sim.run("throttle-iops-tail-latency", variant="after")
    for name in TABLES:
        assert list(getattr(r, name).columns) == r.csv(name).splitlines()[0].split(","), name
    assert len(r.timeline) == 0  # no blk-iocost here
    assert len(r.throttle) > 0 and len(r.iostat) > 0
    assert r.fio["jobs"][0]["jobname"] == "file1"
    assert r.trace == []
    assert blkcg_sim.run("throttle-iops-tail-latency", variant="after", trace=True).trace


def test_tables_are_parsed_when_first_read(small):
    r = blkcg_sim.run(small, variant="one")
    names = ["jobs", "iostat", "throttle", "timeline", "iolatency", "wbt", "deadline", "bfq",
             "writeback", "pressure"]
    assert list(r.tables) == names and len(r.tables) == len(names)
    assert "timeline" in r.tables and "nope" not in r.tables
    assert "(0 read: none)" in repr(r.tables)
    text = r.csv("timeline")
    assert r.open("timeline").read().decode() == text
    chunks = pd.concat(pd.read_csv(r.open("timeline"), chunksize=7), ignore_index=True)
    assert "(0 read: none)" in repr(r.tables)
    pd.testing.assert_frame_equal(r.timeline, pd.read_csv(io.StringIO(text)))
    pd.testing.assert_frame_equal(chunks, r.timeline)
    assert r.tables["timeline"] is r.timeline
    assert "(1 read: timeline)" in repr(r.tables)
    for read in (r.csv, r.open):
        with pytest.raises(ValueError, match="^nope: no such table; one of jobs, iostat, throttle"):
            read("nope")
    with pytest.raises(KeyError):
        r.tables["nope"]


def test_results_pickle_whole_and_read_alike_unpickled(small):
    import pickle

    r = blkcg_sim.run("throttle-iops-tail-latency", variant="after", trace=True)
    back = pickle.loads(pickle.dumps(r))
    assert (back.fio, back.summary, back.io_stat, back.io_pressure, back.warnings,
            back.trace) == (r.fio, r.summary, r.io_stat, r.io_pressure, r.warnings, r.trace)
    assert back.trace and repr(back) == repr(r) and list(back.tables) == list(r.tables)
    for name in r.tables:
        assert back.csv(name) == r.csv(name)
        assert back.open(name).read().decode() == r.csv(name)
        pd.testing.assert_frame_equal(back.tables[name], r.tables[name])
    with pytest.raises(ValueError, match="^nope: no such table; one of jobs, iostat, throttle"):
        back.csv("nope")
    # once unpickled it needs nothing of the run it came from
    assert pickle.loads(pickle.dumps(back)).csv("jobs") == r.csv("jobs")
    small_run = blkcg_sim.run(small, variant="one")
    assert pickle.loads(pickle.dumps(small_run)).trace == []


def test_overrides_seed_kernel_and_dict_scenarios(small):
    import tomllib

    base = blkcg_sim.run(small, variant="one")
    limited = blkcg_sim.run(small, variant="one", **{"cgroup.a.io.max:riops": 100})
    iops = lambda r: r.fio["jobs"][0]["read"]["iops"]  # noqa: E731
    assert iops(base) == pytest.approx(300, rel=0.05)
    assert iops(limited) == pytest.approx(100, rel=0.05)
    # a dict is the same scenario
    as_dict = blkcg_sim.run(tomllib.loads(small), variant="one")
    assert as_dict.fio == base.fio
    # another seed, another kernel: the run changes, and repeats exactly
    other = blkcg_sim.run(small, variant="one", seed=8)
    assert other.fio != base.fio
    assert blkcg_sim.run(small, variant="one", seed=8).fio == other.fio
    # --kernel is the variant's kernel.version; a kernel without blk-iocost refuses it
    assert blkcg_sim.run(small, variant="one", kernel="6.1").fio == blkcg_sim.run(small, variant="two").fio
    with pytest.raises(blkcg_sim.ScenarioError, match="ENOENT"):
        blkcg_sim.run(small, variant="one", kernel="4.19")


def test_threads_give_the_serial_results(small):
    serial = [blkcg_sim.run(small, variant=v, seed=s).fio for v in ("one", "two") for s in (1, 2)]
    got = [None] * 4

    def work(i):
        got[i] = blkcg_sim.run(small, variant=("one", "two")[i // 2], seed=1 + i % 2).fio

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == serial


def test_check_and_scenarios(small):
    assert set(blkcg_sim.check(small)) == {"one", "two"}
    assert list(blkcg_sim.check(small, variant="two")) == ["two"]
    names = blkcg_sim.scenarios()
    assert "iocost-no-completion" in names and "throttle-iops-tail-latency" in names
    assert all(isinstance(v, str) for v in names.values())


def test_scenarios_are_the_command_lines(cli):
    out = subprocess.run([cli, "scenarios"], check=True, capture_output=True, text=True).stdout
    assert out.splitlines() == [f"{n:<32} {a}" for n, a in blkcg_sim.scenarios().items()]


def test_errors_are_scenario_errors_with_file_and_line(tmp_path, small):
    bad = tmp_path / "bad.toml"
    bad.write_text(small.replace('model = "nullb"', 'model = "floppy"'))
    with pytest.raises(blkcg_sim.ScenarioError, match=r"bad\.toml:5: .*floppy"):
        blkcg_sim.run(bad, variant="one")
    with pytest.raises(blkcg_sim.ScenarioError, match=r"bad\.toml:5:"):
        blkcg_sim.check(str(bad))
    # the kernel's refusal, with its errno, at the scenario's line
    refused = small.replace("riops=300", "riops=-3")
    with pytest.raises(ValueError, match=r"<text>:12: .*EINVAL"):
        blkcg_sim.run(refused, variant="one")
    with pytest.raises(blkcg_sim.ScenarioError, match=r"--set device\.irqmode=7"):
        blkcg_sim.run(small, variant="one", **{"device.irqmode": 7})
    with pytest.raises(blkcg_sim.ScenarioError, match="one, two"):
        blkcg_sim.run(small)
    with pytest.raises(blkcg_sim.ScenarioError, match="built in:"):
        blkcg_sim.run("no-such-scenario")
    with pytest.raises(blkcg_sim.ScenarioError, match=r"<dict>"):
        blkcg_sim.run({"device": {"model": "floppy"}})
    with pytest.raises(TypeError):
        blkcg_sim.run(42)


def test_docstring_names_every_controller_and_device_model():
    """The same list as --help's (tests/cli.rs, EVERY_CONTROLLER_AND_DEVICE)."""
    for w in ("blk-throttle", "io.max", "blk-iocost", "io.cost.model", "io.cost.qos", "io.weight",
              "blk-iolatency", "io.latency", "blk-ioprio", "io.prio.class", "mq-deadline",
              "bfq", "io.bfq.weight",
              "nullb", "null_blk", "ssd", "translation layer", "hdd", "cloud"):
        assert w in blkcg_sim.__doc__, w
