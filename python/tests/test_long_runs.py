"""Long runs from Python: a day-long run's result stays small until its tables are
read, and Ctrl-C stops a run or a sweep under way. Each runs in a fresh interpreter
(its peak RSS is its own; SIGINT goes to it alone)."""

import json
import signal
import subprocess
import sys
import time

import pytest

DAY = 86_400


def scenario(secs):
    """Two cgroups at 20 IOPS each under blk-iocost with 1 s periods (the shape of
    tests/memory_flat.rs): a day simulates in a few seconds and makes a 17 MB
    timeline.csv (172,800 rows)."""
    return f"""name = "blk-iocost for {secs} s"
duration = {secs}
[device]
model = "nullb"
irqmode = 2
completion_nsec = 200000
[root]
"io.cost.qos" = "252:0 enable=1 ctrl=user rpct=90 rlat=500000 wpct=90 wlat=500000 min=50 max=150"
"io.cost.model" = "252:0 ctrl=user model=linear rbps=400000000 rseqiops=20000 rrandiops=20000 wbps=400000000 wseqiops=20000 wrandiops=20000"
[cgroup.a]
"io.weight" = "default 100"
fio = "fio --name=a --rw=randread --bs=4k --ioengine=libaio --iodepth=4 --rate_iops=20 --time_based --runtime={secs}"
[cgroup.b]
"io.weight" = "default 300"
fio = "fio --name=b --rw=randread --bs=4k --ioengine=libaio --iodepth=4 --rate_iops=20 --time_based --runtime={secs}"
"""


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
