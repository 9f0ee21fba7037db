#!/usr/bin/env python3
"""Writes complete.log and incomplete.log (README.md): LAVA-format job logs for the log reader."""
import base64
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def rec(out, dt, lvl, msg):
    out.append("- " + json.dumps({"dt": dt, "lvl": lvl, "msg": msg}))


def complete():
    r = json.load(open(os.path.join(HERE, "..", "compare", "base.json")))
    r["label"] = "on"
    files = {
        "uname": "6.1.0-57-amd64\n",
        "cmdline": "console=ttyS0,115200 randomize_kstack_offset=on\n",
        "sysctl.log": "",
        "result.json": json.dumps(r, indent=2) + "\n",
        "run.rc": "0\n",
        "run.log": "syscall/getpid  mean 152.3 ns\n",
    }
    out = []
    rec(out, "2018-04-23T12:07:02.569264", "info", "lava-dispatcher, installed at version: 2023.01-2")
    rec(out, "2018-04-23T12:07:02.572789", "results", {"case": "validate", "definition": "lava", "result": "pass"})
    rec(out, "2018-04-23T12:07:02.573414", "debug", "start: 1.1 download-retry (timeout 00:02:00) [common]")
    rec(out, "2018-04-23T12:07:40.100000", "target",
        "[    0.000000] Linux version 6.1.0-57-amd64 (debian-kernel@lists.debian.org)")
    rec(out, "2018-04-23T12:07:50.200000", "input", "sh /tmp/kstacklab/job.sh kstacklab /tmp/kstacklab/out 'on' '' '--'\n")
    rec(out, "2018-04-23T12:07:50.300000", "target", "+ sh /tmp/kstacklab/job.sh kstacklab /tmp/kstacklab/out 'on' '' '--'")
    for name, body in files.items():
        rec(out, "2018-04-23T12:08:00.000000", "target", "kstacklab-file " + name)
        for line in base64.encodebytes(body.encode()).decode().splitlines():
            rec(out, "2018-04-23T12:08:00.000001", "target", line)
        rec(out, "2018-04-23T12:08:00.000002", "target", "kstacklab-end")
    rec(out, "2018-04-23T12:08:00.100000", "target", "kstacklab-done")
    rec(out, "2018-04-23T12:08:00.200000", "results",
        {"case": "syscall_getpid.mean", "definition": "0_kstacklab", "measurement": "152.300",
         "result": "pass", "units": "ns", "level": "3.1.1"})
    rec(out, "2018-04-23T12:08:01.000000", "target", "<LAVA_TEST_RUNNER EXIT>")
    rec(out, "2018-04-23T12:08:02.000000", "results", {"case": "job", "definition": "lava", "result": "pass"})
    return out


def incomplete():
    out = []
    rec(out, "2018-04-23T12:07:02.569264", "info", "lava-dispatcher, installed at version: 2023.01-2")
    rec(out, "2018-04-23T12:07:02.572789", "results", {"case": "validate", "definition": "lava", "result": "pass"})
    rec(out, "2018-04-23T12:07:40.100000", "target", "[    0.000000] Linux version 6.1.0-57-amd64")
    rec(out, "2018-04-23T12:12:40.100000", "error", "auto-login-action timed out after 300 seconds")
    rec(out, "2018-04-23T12:12:40.200000", "results",
        {"case": "auto-login-action", "definition": "lava", "result": "fail", "duration": "300.00"})
    rec(out, "2018-04-23T12:12:41.000000", "error", "Job error: auto-login-action timed out after 300 seconds")
    rec(out, "2018-04-23T12:12:41.100000", "results",
        {"case": "job", "definition": "lava", "result": "fail",
         "error_msg": "auto-login-action timed out after 300 seconds", "error_type": "Infrastructure"})
    return out


for name, lines in (("complete.log", complete()), ("incomplete.log", incomplete())):
    with open(os.path.join(HERE, name), "w") as f:
        f.write("\n".join(lines) + "\n")
