"""Where ``vlpc tune``'s candidates run: worker processes of this machine, or a Ray cluster.

:class:`Runner` runs a function over a list of work items and hands each result to a callback
as it finishes, until the items are done, the time budget runs out or the user presses Ctrl-C
(SIGINT): then it stops the work under way and returns what finished (``stopped`` says why).

* Locally (``jobs`` worker processes, forked; one: in this process) the workers ignore SIGINT, so
  Ctrl-C reaches this process alone, which ends the pool.
* With Ray (``ray_address``: ``auto`` joins the running cluster or starts one on this machine;
  else the address of a cluster's head, as ``ray.init`` takes it), each item is a Ray task with
  ``max_retries`` (:data:`RAY_MAX_RETRIES`): Ray reschedules the task of a worker lost mid-run
  (a crash, a killed process, a lost node) elsewhere, so a lost worker costs only its tasks'
  time.  The evaluation is deterministic, so the results are those of a local run.  Ray is an
  optional extra: ``pip install '.[distributed]'``.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Sequence

from vlpc.errors import VlpcError

#: Retries of a Ray task whose worker died (Ray's ``max_retries``).
RAY_MAX_RETRIES = 3
#: Seconds between polls of the work under way (budget and Ctrl-C are noticed within this).
POLL_SECONDS = 0.05


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _star(fn_args):
    fn, args = fn_args
    return fn(*args)


class Runner:
    """Runs work items in ``jobs`` local processes (default: the CPU count) or on Ray
    (``ray_address``), until ``deadline`` (a :func:`time.monotonic` value, or None)."""

    def __init__(self, jobs: int | None = None, ray_address: str | None = None, deadline: float | None = None):
        self.jobs = jobs or os.cpu_count() or 1
        self.ray_address = ray_address
        self.deadline = deadline
        self.stopped: str | None = None  #: "budget" or "interrupted" once stopped
        self._pool = None
        self._remote = None
        self._env = None
        if ray_address:
            self._start_ray(ray_address)

    @property
    def width(self) -> int:
        """Work items that run at once."""
        if self._remote is not None:
            import ray

            return max(1, int(ray.cluster_resources().get("CPU", 1)))
        return self.jobs

    def _start_ray(self, address: str) -> None:
        try:
            import ray
        except ImportError:
            raise VlpcError("--ray needs Ray: pip install 'vlpc[distributed]' (or pip install ray)") from None
        env = {"VLPC_EMU_PROCS": "1"}  # a task is one core; no nested emulator workers
        if not ray.is_initialized():
            try:
                if address == "auto":
                    try:
                        ray.init(address="auto", runtime_env={"env_vars": env}, log_to_driver=False,
                                 logging_level="ERROR")
                    except ConnectionError:  # no cluster running: start one on this machine
                        ray.init(num_cpus=self.jobs, runtime_env={"env_vars": env}, log_to_driver=False,
                                 logging_level="ERROR", include_dashboard=False)
                else:
                    ray.init(address=address, runtime_env={"env_vars": env}, log_to_driver=False,
                             logging_level="ERROR")
            except (ConnectionError, ValueError, RuntimeError) as e:
                raise VlpcError(f"--ray {address}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
        self._remote = ray.remote(max_retries=RAY_MAX_RETRIES)(_star)

    def _time_left(self) -> bool:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.stopped = "budget"
        return self.stopped is None

    def map(self, fn: Callable, items: Sequence[tuple], on_result: Callable) -> bool:
        """``fn(*item)`` for each item, ``on_result(index, result)`` as each finishes (in this
        process).  Returns False when stopped (budget or Ctrl-C) before every item finished."""
        if self.stopped or not items:
            return not self.stopped
        try:
            if self._remote is not None:
                return self._map_ray(fn, items, on_result)
            if self.jobs <= 1 or len(items) <= 1:
                # one process: no emulator workers either (a SIGINT sent to this process alone must
                # not leave forked emulator workers behind, writing to a pipe nobody reads)
                old = os.environ.get("VLPC_EMU_PROCS")
                os.environ["VLPC_EMU_PROCS"] = "1"
                try:
                    for i, it in enumerate(items):
                        if not self._time_left():
                            return False
                        on_result(i, fn(*it))
                finally:
                    if old is None:
                        os.environ.pop("VLPC_EMU_PROCS", None)
                    else:
                        os.environ["VLPC_EMU_PROCS"] = old
                return True
            return self._map_pool(fn, items, on_result)
        except KeyboardInterrupt:
            self.stopped = "interrupted"
            self._abort()
            return False

    def _map_pool(self, fn, items, on_result) -> bool:
        if self._pool is None:
            import multiprocessing as mp

            self._env = os.environ.get("VLPC_EMU_PROCS", "\0")
            os.environ["VLPC_EMU_PROCS"] = "1"  # the pool is the parallelism; no nested emulator workers
            self._pool = mp.get_context("fork").Pool(self.jobs, initializer=_ignore_sigint)
        pending = {i: self._pool.apply_async(_star, ((fn, it),)) for i, it in enumerate(items)}
        while pending:
            done = [i for i, r in pending.items() if r.ready()]
            for i in sorted(done):
                on_result(i, pending.pop(i).get())
            if not pending:
                break
            if not self._time_left():
                self._abort()
                return False
            time.sleep(POLL_SECONDS)
        return True

    def _map_ray(self, fn, items, on_result) -> bool:
        import ray

        refs = {self._remote.remote((fn, it)): i for i, it in enumerate(items)}
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=POLL_SECONDS)
            for ref in ready:
                on_result(refs.pop(ref), ray.get(ref))
            if refs and not self._time_left():
                for ref in refs:
                    ray.cancel(ref, force=True)
                return False
        return True

    def _abort(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool.join()
            self._pool = None
        if self._env is not None:  # the pool set it: restore what was there
            old, self._env = self._env, None
            if old == "\0":
                os.environ.pop("VLPC_EMU_PROCS", None)
            else:
                os.environ["VLPC_EMU_PROCS"] = old

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["RAY_MAX_RETRIES", "Runner"]
