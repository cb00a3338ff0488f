"""Long runs from Python: a day-long run's result stays small until its tables are
read, and Ctrl-C stops a run or a sweep under way. Each runs in a fresh interpreter
(its peak RSS is its own; SIGINT goes to it alone)."""

import json
import pathlib
import signal
import subprocess
import sys
import time

import pytest

DAY = 86_400
ROOT = pathlib.Path(__file__).resolve().parents[2]


def scenario(secs):
    """The long run the memory tests share (tests/data/long-iocost.toml.in): two
    cgroups at 20 IOPS each under blk-iocost with 1 s periods; a day simulates in a few
    seconds and makes a 17 MB timeline.csv (172,800 rows)."""
    return (ROOT / "tests" / "data" / "long-iocost.toml.in").read_text().replace("SECS", str(secs))


def child(code, *args, **popen):
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], text=True, **popen)


# peak RSS (KiB) once the day has run and its iostat table is read, then the rows of
# iostat and of timeline (counted through r.open, never whole), then peak RSS again
DAY_RUN = """
import json, resource, sys
import blkcg_sim
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
r = blkcg_sim.run(sys.argv[1])
iostat = len(r.iostat)
print(json.dumps({"rss": peak()}), flush=True)
timeline = sum(1 for _ in r.open("timeline")) - 1
print(json.dumps({"iostat": iostat, "timeline": timeline, "rss": peak()}))
"""


def test_a_day_long_run_stays_under_100_mb(tmp_path):
    sc = tmp_path / "day.toml"
    sc.write_text(scenario(DAY))
    p = child(DAY_RUN, sc, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate(timeout=600)
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines, err
    assert lines[0]["rss"] < 100 * 1024, f"peak RSS {lines[0]['rss']} KiB after run() of a day"
    assert p.returncode == 0, err
    last = lines[1]
    assert last["iostat"] == DAY
    # one row per cgroup per period; a 1 s period lasts 1.001 s (HZ=1000)
    assert abs(last["timeline"] - 2 * DAY / 1.001) <= 4, last
    assert last["rss"] < 100 * 1024, f"peak RSS {last['rss']} KiB after reading the timeline"


# prints "started" just before the call, then how it ended
INTERRUPTED = """
import sys
import blkcg_sim
call = {
    "run": lambda sc: blkcg_sim.run(sc),
    "sweep": lambda sc: blkcg_sim.sweep(sc, {}, seeds=2, workers=2),
}[sys.argv[2]]
print("started", flush=True)
try:
    call(sys.argv[1])
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
else:
    print("finished", flush=True)
"""


@pytest.mark.parametrize("call", ["run", "sweep"])
def test_ctrl_c_stops_a_long_run_or_sweep(tmp_path, call):
    # thirty simulated days: a minute or more of work, interrupted after a second
    sc = tmp_path / "month.toml"
    sc.write_text(scenario(30 * DAY))
    p = child(INTERRUPTED, sc, call, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert p.stdout.readline() == "started\n"
        time.sleep(1)
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=10)
        took = time.monotonic() - sent
    except subprocess.TimeoutExpired:
        pytest.fail(f"{call}: still running 10 s after SIGINT")
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert out == "KeyboardInterrupt\n", (out, err)
    assert p.returncode == 0, err
    assert took < 5, f"{call}: {took:.1f} s from SIGINT to the end"
