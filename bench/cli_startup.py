#!/usr/bin/env python3
"""How long the `xpool` binary takes to start and exit: what a client command pays before its first request.

Runs `xpool --version` (the client binary) and `xpool-roles` with no role (the roles binary: it loads its
libraries, prints its usage and exits) many times each, alternating, and prints the median and p90 wall time of
one run in milliseconds.

Usage: bench/cli_startup.py [--xpool build/bin/xpool] [--runs 200]
"""
import argparse
import os
import statistics
import subprocess
import time


def once(argv):
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - start) * 1000.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xpool", default="build/bin/xpool")
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    roles = os.path.join(os.path.dirname(args.xpool), "xpool-roles")
    commands = {"xpool --version": [args.xpool, "--version"], "xpool-roles (no role)": [roles]}
    times = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, argv in commands.items():
            times[name].append(once(argv))
    for name, samples in times.items():
        samples.sort()
        p90 = samples[int(len(samples) * 0.9) - 1]
        print(f"{name:24s} median {statistics.median(samples):6.2f} ms   p90 {p90:6.2f} ms   ({len(samples)} runs)")


if __name__ == "__main__":
    main()
