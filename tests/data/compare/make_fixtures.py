#!/usr/bin/env python3
"""Writes the hand-made result files used by tests/report_test.cc, tests/stats_test.cc and
tests/e2e/compare_cli.sh. Deterministic (fixed seeds, values rounded to 0.01 ns); rerun after a
schema change:  python3 tests/data/compare/make_fixtures.py tests/data/compare
"""
import json
import os
import random
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
METRICS = ["mean", "stddev", "min", "p50", "p90", "p99", "p99.9", "p99.99", "max"]
EMPTY_HIST = {"unit": "ps", "sub_bucket_bits": 11, "max_value_bits": 44, "count": 0, "sum": 0,
              "min": 0, "max": 0, "overflow": 0, "buckets": []}


def reps(rng, mean, n, noise=0.005, session_of=lambda i: 0, trend=0.0, decay=1.0):
    out = []
    for i in range(n):
        m = mean * (1 + rng.gauss(0, noise)) * decay ** i + trend * i
        r = {"iterations": 100000, "session": session_of(i)}
        shape = {"mean": 1.0, "stddev": 0.08, "min": 0.9, "p50": 0.98, "p90": 1.05, "p99": 1.4,
                 "p99.9": 2.2, "p99.99": 4.0, "max": 30.0}
        for k in METRICS:
            jitter = 1 + (rng.gauss(0, noise) if k in ("p99", "p99.9", "p99.99") else 0)
            r[k] = round(m * shape[k] * jitter, 2)
        out.append(r)
    return out


def bench(name, repetitions, params=None, variant=None, unit="ns", lower=True, baseline=False):
    b = {"name": name, "params": params or {}}
    if variant is not None:
        b["variant"] = variant
    b.update({"unit": unit, "lower_is_better": lower})
    if baseline:
        b["baseline"] = True
    b.update({"timing": "percall",
              "repetitions": repetitions, "histogram": EMPTY_HIST})
    return b


def result(label, benchmarks):
    return {"schema": "kstacklab-result/1", "tool_version": "0.1.0", "created": "2026-01-01T00:00:00Z",
            "label": label, "partial": False, "environment": {}, "run": {},
            "timer": {"source": "fake", "freq_hz": 1e9, "overhead_ns": 0, "invariant": True},
            "benchmarks": benchmarks}


def write(name, doc):
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def syscall_set(seed, factor, n=10):
    rng = random.Random(seed)
    return [bench("syscall/getpid", reps(rng, 200.0 * factor, n)),
            bench("syscall/getppid", reps(rng, 210.0 * factor, n)),
            bench("micromm/fork", reps(rng, 40000.0 * factor, n), params={"h": 0}),
            bench("micromm/fork", reps(rng, 52000.0 * factor, n), params={"h": 1})]


# A planted +5 % / -5 % shift on low-noise (0.5 % CV) data: always (R) / (I).
write("base.json", result("base", syscall_set(1, 1.00)))
write("plus5.json", result("plus5", syscall_set(2, 1.05)))
write("minus5.json", result("minus5", syscall_set(3, 0.95)))
# Same label as base.json: the columns get the file stems.
write("base_again.json", result("base", syscall_set(4, 1.00)))

# One file, several variants of one benchmark (model designs): compare FILE alone works.
rng = random.Random(5)
write("variants.json", result("model", [
    bench("model/kstack", reps(rng, 50.0, 8), variant="percpu-prng"),
    bench("model/kstack", reps(rng, 47.0, 8), variant="off", baseline=True),
    bench("model/kstack", reps(rng, 58.0, 8), variant="get_random_u16"),
    bench("model/kstack", reps(rng, 47.2, 8), variant="siphash"),
]))

# Three sessions of four repetitions, sessions shifted: the hierarchical estimate.
rng = random.Random(6)
sess = reps(rng, 200.0, 12, session_of=lambda i: i // 4)
for i, r in enumerate(sess):
    shift = [0.0, 4.0, -3.0][i // 4]
    for k in METRICS:
        r[k] = round(r[k] + shift, 2)
write("sessions.json", result("sess", [bench("syscall/getpid", sess)]))

# Two repetitions only: change without verdict, footnote.
rng = random.Random(7)
write("tiny.json", result("tiny", [bench("syscall/getpid", reps(rng, 220.0, 2))]))

# A steady upward trend over the repetitions: a drift warning.
rng = random.Random(8)
write("drift.json", result("drift", [bench("syscall/getpid", reps(rng, 200.0, 10, noise=0.001, trend=1.0))]))

# getpid measured in us: units differ -> exit 2.
rng = random.Random(9)
write("units_us.json", result("us", [bench("syscall/getpid", reps(rng, 0.2, 10), unit="us")]))

# A benchmark the baseline lacks, and a missing one: blank cells plus a note.
rng = random.Random(10)
write("partial_set.json", result("partial", [bench("syscall/getpid", reps(rng, 201.0, 10)),
                                             bench("syscall/invalid", reps(rng, 190.0, 10))]))

# Runs of two labels (one file per run, e.g. per boot), each run shifted by a run-level random
# effect of 1 % SD: label "kbase" at 200 ns, label "kplus5" 5 % slower. Compared as labels, the
# samples are per-run means.
for r in range(3):
    rng = random.Random(100 + r)
    write(f"kbase_{r + 1}.json", result("kbase", [bench("syscall/getpid", reps(rng, 200.0 * (1 + rng.gauss(0, 0.01)), 10))]))
    rng = random.Random(200 + r)
    write(f"kplus5_{r + 1}.json", result("kplus5", [bench("syscall/getpid", reps(rng, 210.0 * (1 + rng.gauss(0, 0.01)), 10))]))

# An A/A comparison of 3 + 3 runs of eight rows in which the machine drifted during some runs:
# aa_a1 slows down in three rows, aa_b1 speeds up geometrically in five (its tails fall from 2.2
# times the mean to a fifth of it: a linear fit of such a fall ends below zero), aa_b2 in one
# row. compare_cli.sh checks that the warnings summarise them, one line per file.
AA_ROWS = [("syscall/getpid", 200.0), ("syscall/getppid", 210.0), ("syscall/invalid", 190.0),
           ("syscall/fstat", 260.0)]
AA_DRIFT = {"a1": {0: "up", 2: "up", 5: "up"}, "b1": {0: "down", 1: "down", 3: "down", 4: "down",
                                                     6: "down"}, "b2": {7: "up"}}
for label in ("a", "b"):
    for r in range(3):
        name = f"{label}{r + 1}"
        rng = random.Random(300 + 10 * r + (label == "b"))
        rows = []
        for i, (bname, mean) in enumerate(AA_ROWS * 2):
            kind = AA_DRIFT.get(name, {}).get(i)
            rs = reps(rng, mean, 12, trend=mean / 30 if kind == "up" else 0.0,
                      decay=0.95 if kind == "down" else 1.0)
            if kind == "down":  # the tails fall faster than the mean
                for j, rep in enumerate(rs):
                    rep["p99.9"] = round(rep["p99.9"] * 0.85 ** j, 2)
            rows.append(bench(bname, rs, variant="raw" if i < 4 else "libc", baseline=i < 4))
        write(f"aa_{name}.json", dict(result(label, rows), created=f"2026-01-0{r + 1}T0{label == 'b'}:00:00Z"))

# --ab files (run.ab set): each row's variant carries the value ("raw,kernel.stack_erasing=0"),
# one row without a variant of its own; two labels, the second 3 % slower under =1.
for label, seed, slower in (("abx", 400, 1.00), ("aby", 401, 1.03)):
    rng = random.Random(seed)
    rows = []
    for value in ("0", "1"):
        tag = "kernel.stack_erasing=" + value
        f = slower if value == "1" else 1.0
        rows.append(bench("syscall/getpid", reps(rng, 200.0 * f, 8), variant="raw," + tag,
                          baseline=value == "0"))
        rows.append(bench("syscall/getpid", reps(rng, 300.0 * f, 8), variant="libc," + tag))
        rows.append(bench("micromm/fork", reps(rng, 40000.0 * f, 8), params={"h": 1},
                          variant=tag, baseline=value == "0"))
    doc = result(label, rows)
    doc["run"] = {"ab": ["sysctl:kernel.stack_erasing=0,1"]}
    write(f"ab_{label}.json", doc)

# Bad inputs.
doc = result("future", syscall_set(11, 1.0))
doc["schema"] = "kstacklab-result/9"
write("bad_schema.json", doc)
with open(os.path.join(OUT, "base.json")) as f:
    text = f.read()
with open(os.path.join(OUT, "truncated.json"), "w") as f:
    f.write(text[:700])
with open(os.path.join(OUT, "inf_metric.json"), "w") as f:
    f.write(text.replace('"p99": ', '"p99": 1e999, "x": ', 1))
