#!/usr/bin/env python3
"""A stand-in training job for xpool: "trains" for N steps, prints progress, checkpoints to its workdir.

Works without a GPU (it only reads the environment xpool gives it). It follows xpool's suspend contract:

  * on start it resumes from ./checkpoint.json when one exists (XPOOL_RESTART_COUNT says how often it restarted);
  * when the agent asks it to suspend — SIGUSR1, or the file named by XPOOL_SUSPEND_FILE appears — it writes a
    checkpoint and exits 0 at the end of the current step;
  * on SIGTERM (cancel / stop) it writes a checkpoint and exits 143.

    python3 examples/train.py --steps 100 --step-seconds 0.1
    python3 examples/train.py --steps 5 --exit-code 3      # finishes, then fails with exit code 3
"""
import argparse
import json
import math
import os
import random
import signal
import sys
import time

CHECKPOINT = "checkpoint.json"
_requested = {"suspend": False, "stop": False}


def _on_suspend(signum, frame):
    _requested["suspend"] = True


def _on_term(signum, frame):
    _requested["stop"] = True


def load_checkpoint(path):
    try:
        with open(path) as f:
            state = json.load(f)
        return int(state.get("step", 0)), float(state.get("loss", 1.0))
    except FileNotFoundError:
        return 0, 1.0
    except (ValueError, OSError) as e:
        print(f"warning: ignoring unreadable checkpoint {path}: {e}", flush=True)
        return 0, 1.0


def save_checkpoint(path, step, loss, steps):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"step": step, "loss": loss, "steps": steps, "time": time.time()}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)  # atomic: a crash never leaves half a checkpoint


def suspend_requested():
    if _requested["suspend"]:
        return True
    flag = os.environ.get("XPOOL_SUSPEND_FILE")
    return bool(flag) and os.path.exists(flag)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100, help="steps in all (default 100)")
    parser.add_argument("--step-seconds", type=float, default=0.1, help="time per step (default 0.1)")
    parser.add_argument("--checkpoint-every", type=int, default=10, help="steps between checkpoints")
    parser.add_argument("--checkpoint", default=CHECKPOINT, help="checkpoint file (default ./checkpoint.json)")
    parser.add_argument("--exit-code", type=int, default=0, help="exit with this code when done (tests)")
    args = parser.parse_args()
    if args.steps < 1 or args.step_seconds < 0 or args.checkpoint_every < 1:
        parser.error("--steps and --checkpoint-every must be >= 1, --step-seconds >= 0")

    signal.signal(signal.SIGUSR1, _on_suspend)
    signal.signal(signal.SIGTERM, _on_term)

    env = {k: os.environ.get(k, "") for k in ("XPOOL_JOB_ID", "XPOOL_REPLICA", "XPOOL_RESTART_COUNT",
                                               "CUDA_VISIBLE_DEVICES", "XPOOL_DEVICE_MEMORY_LIMIT_0",
                                               "XPOOL_DEVICE_CORE_LIMIT_0", "RANK", "WORLD_SIZE")}
    print("train.py: " + " ".join(f"{k}={v}" for k, v in env.items() if v), flush=True)

    step, loss = load_checkpoint(args.checkpoint)
    if step > 0:
        print(f"resuming from step {step} (restart {env['XPOOL_RESTART_COUNT'] or 0})", flush=True)
    rng = random.Random(1234 + step)  # seeded: the same run prints the same losses
    while step < args.steps:
        time.sleep(args.step_seconds)
        step += 1
        loss = max(0.0, loss * 0.97 + 0.01 * math.sin(step) + rng.uniform(-0.005, 0.005))
        print(f"step {step}/{args.steps} loss {loss:.4f}", flush=True)
        if step % args.checkpoint_every == 0 or step == args.steps:
            save_checkpoint(args.checkpoint, step, loss, args.steps)
        if _requested["stop"]:
            save_checkpoint(args.checkpoint, step, loss, args.steps)
            print(f"stopped at step {step}; checkpoint saved", flush=True)
            return 143
        if step < args.steps and suspend_requested():
            save_checkpoint(args.checkpoint, step, loss, args.steps)
            print(f"suspended at step {step}; checkpoint saved", flush=True)
            return 0
    print(f"done: {args.steps} steps, final loss {loss:.4f}", flush=True)
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
