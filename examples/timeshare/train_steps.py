#!/usr/bin/env python3
"""A preemptible "training" job built on examples/xpool_helper.py: N steps of a fake loss, one checkpoint per
--checkpoint-every steps, checkpoint-and-exit-0 when xpool suspends it, resume from the checkpoint on restart.

    python3 examples/timeshare/train_steps.py --steps 600 --step-seconds 0.5
    python3 examples/timeshare/train_steps.py --ignore-suspend   # misbehaves: killed after its grace (tests)
"""
import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import xpool_helper  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600, help="steps in all (default 600)")
    parser.add_argument("--step-seconds", type=float, default=0.5, help="time per step (default 0.5)")
    parser.add_argument("--checkpoint-every", type=int, default=10, help="steps between checkpoints (default 10)")
    parser.add_argument("--checkpoint", default=None, help="checkpoint file (default: per job, in the workdir)")
    parser.add_argument("--ignore-suspend", action="store_true", help="ignore the suspend request (tests)")
    args = parser.parse_args()
    if args.steps < 1 or args.step_seconds < 0 or args.checkpoint_every < 1:
        parser.error("--steps and --checkpoint-every must be >= 1, --step-seconds >= 0")

    def step(n, state):
        time.sleep(args.step_seconds)
        state["loss"] = round(state["loss"] * 0.99, 6)
        return state

    if args.ignore_suspend:
        signal.signal(xpool_helper.suspend_signal(), signal.SIG_IGN)
        for n in range(1, args.steps + 1):
            time.sleep(args.step_seconds)
            print(f"step {n}/{args.steps} (ignoring suspend requests)", flush=True)
        return 0
    xpool_helper.run_training(step, args.steps, initial_state={"loss": 1.0}, checkpoint_path=args.checkpoint,
                              checkpoint_every=args.checkpoint_every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
