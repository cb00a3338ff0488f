"""Shared fixtures: a small scenario, and the command line to compare with."""

import os
import pathlib

import pytest

from require_tools import missing_tool

ROOT = pathlib.Path(__file__).resolve().parents[2]

# two cgroups on null_blk: blk-throttle on one, blk-iocost weights on both; 1 s runs
SMALL = """
name = "small"
seed = 7
[device]
model = "nullb"
irqmode = 2
completion_nsec = 100000
[root]
"io.cost.qos" = "252:0 enable=1 ctrl=user rpct=90 rlat=5000 wpct=90 wlat=5000 min=50 max=150"
"io.cost.model" = "252:0 ctrl=user model=linear rbps=500000000 rseqiops=20000 rrandiops=20000 wbps=500000000 wseqiops=20000 wrandiops=20000"
[cgroup.a]
"io.max" = "252:0 riops=300"
fio = "fio --name=a --rw=randread --bs=4k --iodepth=4 --ioengine=libaio --runtime=1 --time_based"
[cgroup.b]
"io.weight" = "default 200"
fio = "fio --name=b --rw=randrw --bs=16k --iodepth=2 --ioengine=libaio --runtime=1 --time_based"
[[variant]]
name = "one"
[[variant]]
name = "two"
kernel = { version = "6.1" }
"""


@pytest.fixture(scope="session")
def small():
    return SMALL


@pytest.fixture
def cli():
    """The blkcg-sim binary ($BLKCG_SIM_BIN, else the repository's release build)."""
    path = os.environ.get("BLKCG_SIM_BIN") or str(ROOT / "target" / "release" / "blkcg-sim")
    if not os.access(path, os.X_OK):
        missing_tool(f"the blkcg-sim binary at {path}", "cargo build --release, or set BLKCG_SIM_BIN",
                     "to compare with the command line")
    return path
