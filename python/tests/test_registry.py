"""Every controller the registry has is reachable from Python: its files (whole lines and
each token) as overrides, its switches, and its tables in ``Result.tables``."""

import blkcg_sim

DEV = "252:0"


def scenario_of(c):
    """A two-cgroup null_blk scenario dict under controller ``c``: each of its files
    written with its example line (a child's in cgroup ``a``, a root-only one in
    ``[root]``), an elevator as the scheduler."""
    root, a = {}, {}
    for f in c["files"]:
        (a if f["on_children"] else root)[f["name"]] = f["example"].replace("MAJ:MIN", DEV)

    def fio(name):
        return (f"fio --name={name} --rw=randrw --bs=4k --ioengine=libaio --direct=1 "
                "--iodepth=8 --runtime=2 --time_based")

    sc = {
        "name": "registry",
        "seed": 1,
        "device": {
            "model": "nullb", "dev": DEV, "irqmode": 2, "completion_nsec": 200000,
            "scheduler": c["name"] if c["kind"] == "elevator" else "none",
        },
        "kernel": {"hz": 250},
        "root": root,
        "cgroup": {"a": {**a, "fio": fio("a")}, "b": {"fio": fio("b")}},
    }
    if c["acts_on"] == "buffered-writes":
        # wbt: b writes through the page cache of a small host, written back at once
        sc["host"] = {"memory": "256M"}
        sc["cgroup"]["b"]["fio"] = ("fio --name=b --rw=write --bs=1M --ioengine=psync "
                                    "--size=64M --runtime=2 --time_based")
    return sc


def key_of(f):
    return f"cgroup.a.{f['name']}" if f["on_children"] else f"root.{f['name']}"


def test_every_controller_is_listed():
    names = {c["name"] for c in blkcg_sim.controllers()}
    assert {"blk-throttle", "blk-iocost", "blk-ioprio", "blk-iolatency", "wbt",
            "mq-deadline", "bfq"} <= names


def test_every_controllers_tables_files_and_switches_from_python():
    for c in blkcg_sim.controllers():
        sc = scenario_of(c)
        r = blkcg_sim.run(sc)
        for name in c["tables"]:
            assert name in r.tables, (c["name"], name)
            assert len(r.tables[name]) > 0, (c["name"], name)
        # every file as an override, whole, then token by token (a run refuses two
        # overrides that write the same line)
        whole, by_token = {}, {}
        for f in c["files"]:
            whole[key_of(f)] = f["example"].replace("MAJ:MIN", DEV)
            for word in f["example"].split():
                if "=" in word:
                    tok, val = word.split("=", 1)
                    assert tok in f["tokens"], (f["name"], tok)
                    by_token[f"{key_of(f)}:{tok}"] = val
        for attr in c["attributes"]:
            whole[f"device.iosched.{attr}"] = 1
        for overrides in (whole, by_token):
            assert blkcg_sim.run(sc, **overrides).tables.keys() == r.tables.keys()
        if c["switches"]:
            key = f"kernel.{c['switches']}no_such_switch"
            try:
                blkcg_sim.run(sc, **{key: "x"})
            except blkcg_sim.ScenarioError as e:
                assert f"{c['switches']}no_such_switch" in str(e)
            else:
                raise AssertionError(f"{key} accepted")


def test_iolatency_and_deadline_tables_have_their_rows():
    # the tables the library returned none of before the registry carried them
    r = blkcg_sim.run("validate-iolatency")
    assert len(r.tables["iolatency"]) > 0
    assert set(r.tables["iolatency"]["kind"]) == {"window", "tick"}
    r = blkcg_sim.run("example-deadline-reads-vs-writes", variant="writes_starved-2")
    assert len(r.tables["deadline"]) > 0
    assert "be" in set(r.tables["deadline"]["class"])
