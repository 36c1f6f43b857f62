#!/usr/bin/env python3
"""The pod side of time-sharing on Kubernetes (docs/kubernetes.md): examples/xpool_helper.py run as a pod's
training loop, with the xpool.io/suspend-by annotation as a downward API file (empty until the extender sets it).

Checks: an empty file does not suspend; a deadline written into it makes the helper checkpoint and exit with
XPOOL_SUSPEND_EXIT_CODE; the recreated pod (a new process, same volume) resumes from the checkpoint and finishes;
SIGTERM (the eviction, with XPOOL_SUSPEND_SIGNAL=SIGTERM) checkpoints too; a bad exit code falls back to 0.
Usage: helper_suspend_contract_test.py --source-dir DIR
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile

TRAIN = """
import sys, time
sys.path.insert(0, {examples!r})
import xpool_helper
def step(n, state):
    time.sleep({delay})
    state["n"] = n
    return state
xpool_helper.run_training(step, total_steps={total}, initial_state={{}}, checkpoint_path={ckpt!r},
                          checkpoint_every=1000)
"""


def run(examples, workdir, total, delay, env_extra, on_started=None, timeout=60):
    ckpt = os.path.join(workdir, "checkpoint.json")
    script = os.path.join(workdir, "train.py")
    with open(script, "w") as f:
        f.write(TRAIN.format(examples=examples, delay=delay, total=total, ckpt=ckpt))
    env = dict(os.environ)
    for key in ("XPOOL_SUSPEND_FILE", "XPOOL_SUSPEND_SIGNAL", "XPOOL_SUSPEND_EXIT_CODE"):
        env.pop(key, None)
    env.update(env_extra)
    proc = subprocess.Popen([sys.executable, script], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    out = ""
    if on_started:  # once a few steps ran (the handler is installed at import, before step 1)
        for line in proc.stdout:
            out += line
            if line.startswith("step 3/"):
                break
        on_started(proc)
    rest, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out + rest, ckpt



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    examples = os.path.join(args.source_dir, "examples")
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
            print("FAIL:", what, flush=True)

    with tempfile.TemporaryDirectory() as d:
        annotation = os.path.join(d, "suspend-by")
        open(annotation, "w").close()  # kubelet's file for an annotation not set yet: empty
        env = {"XPOOL_SUSPEND_ANNOTATION_FILE": annotation, "XPOOL_SUSPEND_EXIT_CODE": "75"}

        # 1. Empty file: runs to the end.
        code, out, ckpt = run(examples, d, 5, 0.0, env)
        check(code == 0 and "done: 5 steps" in out, f"an empty annotation file must not suspend: {code} {out!r}")
        os.remove(ckpt)

        # 2. The extender sets the annotation mid-run: checkpoint, exit 75.
        def set_deadline(_):
            with open(annotation + ".tmp", "w") as f:
                f.write("2026-12-02T13:05:51Z")
            os.replace(annotation + ".tmp", annotation)  # kubelet swaps the file atomically too

        code, out, ckpt = run(examples, d, 10000, 0.01, env, on_started=set_deadline)
        check(code == 75, f"suspend must exit with XPOOL_SUSPEND_EXIT_CODE: {code} {out!r}")
        with open(ckpt) as f:
            saved = json.load(f)["step"]
        check(3 <= saved < 10000, f"the checkpoint holds the step reached: {saved}")

        # 3. The Job's replacement pod: same volume, annotation not set on the new pod.
        open(annotation, "w").close()
        code, out, ckpt = run(examples, d, saved + 3, 0.0, env)
        check(code == 0 and f"resuming from step {saved}" in out and f"done: {saved + 3} steps" in out,
              f"the recreated pod resumes from the checkpoint: {code} {out!r}")
        os.remove(ckpt)

        # 4. Eviction: SIGTERM with XPOOL_SUSPEND_SIGNAL=SIGTERM checkpoints and exits 75.
        def evict(proc):
            proc.send_signal(signal.SIGTERM)

        code, out, ckpt = run(examples, d, 10000, 0.01, dict(env, XPOOL_SUSPEND_SIGNAL="SIGTERM"), on_started=evict)
        check(code == 75 and os.path.exists(ckpt), f"SIGTERM checkpoints when it is the suspend signal: {code} {out!r}")
        os.remove(ckpt)

        # 5. A bad exit code: said, and 0.
        with open(annotation, "w") as f:
            f.write("2026-12-02T13:05:51Z")
        code, out, ckpt = run(examples, d, 5, 0.0, dict(env, XPOOL_SUSPEND_EXIT_CODE="300"))
        check(code == 0 and "XPOOL_SUSPEND_EXIT_CODE must be 0..255" in out, f"bad exit code: {code} {out!r}")

    if failures:
        print(f"{len(failures)} check(s) failed", flush=True)
        return 1
    print("ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
