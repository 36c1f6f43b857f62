"""xpool's suspend contract for Python jobs: import this, train through `run_training`, and the job checkpoints
and leaves when xpool needs its devices for higher-priority work, then resumes where it stopped.

The contract (docs/time-sharing.md, "The suspend contract"):
  * to suspend a task, the agent writes the file named by XPOOL_SUSPEND_FILE and sends the job's suspend
    signal (`checkpoint: {signal: SIGUSR2}` in the spec; default SIGUSR1; the agent exports its name as
    XPOOL_SUSPEND_SIGNAL) to the task's process group;
  * the task saves a checkpoint and exits 0 within its grace (`checkpoint: {grace: 60}` in the job spec);
    past the grace it gets SIGTERM, then SIGKILL;
  * the job goes back to the queue keeping its place and later restarts in the same workdir with
    XPOOL_RESTART_COUNT one higher, so it loads its checkpoint.

On Kubernetes (docs/kubernetes.md, "Time-sharing on Kubernetes") the extender writes the pod annotation
xpool.io/suspend-by; mount it with a downward API volume and name the file in XPOOL_SUSPEND_ANNOTATION_FILE (kubelet
keeps it empty until the annotation is set). Set XPOOL_SUSPEND_SIGNAL=SIGTERM so the eviction that follows the
deadline checkpoints too, and XPOOL_SUSPEND_EXIT_CODE (e.g. 75) to the code the Job's podFailurePolicy ignores.

    import xpool_helper
    def step(n, state):              # one unit of work; returns the new state (JSON-serialisable)
        state["loss"] *= 0.99
        return state
    xpool_helper.run_training(step, total_steps=1000, initial_state={"loss": 1.0})

Importing this module installs the handler for XPOOL_SUSPEND_SIGNAL (default SIGUSR1) at once (the earlier, the smaller the window in which the
signal's default action would kill the task). Only the standard library is used; works with or without a GPU.
Not thread-safe (import and call from the main thread).
"""
import json
import os
import signal
import sys
import time

_suspend_signalled = False


def _on_suspend(signum, frame):
    global _suspend_signalled
    _suspend_signalled = True


_SUSPEND_SIGNALS = ("SIGUSR1", "SIGUSR2", "SIGINT", "SIGTERM", "SIGHUP")


def suspend_signal():
    """The job's suspend signal: XPOOL_SUSPEND_SIGNAL (a name such as "SIGUSR2") when set, else SIGUSR1."""
    name = os.environ.get("XPOOL_SUSPEND_SIGNAL", "") or "SIGUSR1"
    if name not in _SUSPEND_SIGNALS:
        print(f"xpool_helper: unknown XPOOL_SUSPEND_SIGNAL {name!r}, using SIGUSR1", flush=True)
        name = "SIGUSR1"
    return getattr(signal, name)


def install_suspend_handler(signum=None):
    """Catches the suspend signal (default: suspend_signal()) so it sets a flag instead of ending the process."""
    signal.signal(suspend_signal() if signum is None else signum, _on_suspend)


def suspend_requested():
    """True once xpool asked this task to suspend: the signal arrived, XPOOL_SUSPEND_FILE exists, or the file
    XPOOL_SUSPEND_ANNOTATION_FILE (Kubernetes: the xpool.io/suspend-by annotation) is not empty."""
    if _suspend_signalled:
        return True
    flag = os.environ.get("XPOOL_SUSPEND_FILE")
    if flag and os.path.exists(flag):
        return True
    annotation = os.environ.get("XPOOL_SUSPEND_ANNOTATION_FILE")
    if not annotation:
        return False
    try:
        with open(annotation) as f:
            return f.read().strip() != ""
    except OSError:
        return False


def suspend_exit_code():
    """The exit code after a suspend's checkpoint: XPOOL_SUSPEND_EXIT_CODE (0..255), else 0."""
    try:
        code = int(os.environ.get("XPOOL_SUSPEND_EXIT_CODE", "0") or 0)
    except ValueError:
        print("xpool_helper: XPOOL_SUSPEND_EXIT_CODE is not a number, using 0", flush=True)
        return 0
    if not 0 <= code <= 255:
        print("xpool_helper: XPOOL_SUSPEND_EXIT_CODE must be 0..255, using 0", flush=True)
        return 0
    return code


def restart_count():
    """How often this job restarted (0 on the first run), from XPOOL_RESTART_COUNT."""
    try:
        return int(os.environ.get("XPOOL_RESTART_COUNT", "0") or 0)
    except ValueError:
        return 0


def default_checkpoint_path():
    """checkpoint-job<ID>-r<REPLICA>.json in the workdir: one file per replica, kept across restarts."""
    job = os.environ.get("XPOOL_JOB_ID", "local")
    replica = os.environ.get("XPOOL_REPLICA", "0")
    return os.path.join(os.getcwd(), f"checkpoint-job{job}-r{replica}.json")


def save_checkpoint(path, step, state):
    """Writes {"step", "state"} atomically (a crash never leaves half a checkpoint)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"step": step, "state": state, "time": time.time()}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_checkpoint(path):
    """(step, state) from the checkpoint, or (0, None) when there is none or it cannot be read."""
    try:
        with open(path) as f:
            data = json.load(f)
        return int(data["step"]), data.get("state")
    except FileNotFoundError:
        return 0, None
    except (ValueError, KeyError, TypeError, OSError) as e:
        print(f"xpool_helper: ignoring unreadable checkpoint {path}: {e}", flush=True)
        return 0, None


def run_training(step_fn, total_steps, initial_state=None, checkpoint_path=None, checkpoint_every=10,
                 log_every=1, exit_on_suspend=True):
    """Runs step_fn(step_number, state) -> state for steps 1..total_steps, resuming from the checkpoint.

    Checkpoints every `checkpoint_every` steps and at the end. When a suspend is requested it checkpoints after
    the current step and exits with suspend_exit_code() (or returns ("suspended", step, state) when
    exit_on_suspend is False).
    Returns ("done", total_steps, state) when every step ran.
    """
    if total_steps < 0 or checkpoint_every < 1:
        raise ValueError("total_steps must be >= 0 and checkpoint_every >= 1")
    install_suspend_handler()
    path = checkpoint_path or default_checkpoint_path()
    step, state = load_checkpoint(path)
    if state is None:
        state = initial_state if initial_state is not None else {}
    if step > 0:
        print(f"resuming from step {step} (restart {restart_count()})", flush=True)
    else:
        print(f"starting at step 0 (restart {restart_count()})", flush=True)
    while step < total_steps:
        if suspend_requested():
            save_checkpoint(path, step, state)
            code = suspend_exit_code()
            print(f"suspend requested: checkpoint at step {step} saved, exiting {code}", flush=True)
            if exit_on_suspend:
                sys.exit(code)
            return "suspended", step, state
        step += 1
        state = step_fn(step, state)
        if log_every and step % log_every == 0:
            print(f"step {step}/{total_steps}", flush=True)
        if step % checkpoint_every == 0:
            save_checkpoint(path, step, state)
    save_checkpoint(path, step, state)
    print(f"done: {total_steps} steps", flush=True)
    return "done", step, state


install_suspend_handler()
