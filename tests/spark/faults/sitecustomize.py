"""Fault injection for Spark's Python workers (on ``PYTHONPATH`` of a Spark driver that
tests/spark/eo_job.py runs; the workers inherit it).

``CYKAFKA_FAULT`` is JSON: ``{"tasks": [partition ids], "when": "after_commit" |
"before_commit" | "after_rows", "rows": n, "sleep": seconds, "exit": true}``.  In
attempt 0 of the named Spark partitions: around the first ``commit_transaction`` of
the task (``after_commit``, ``before_commit``), or once the task has handed ``rows``
rows to ``produce_batch`` and flushed them (``after_rows``: they are in the topic),
sleep, then (with ``exit``) kill the worker with ``os._exit(137)``, as the kernel's
OOM killer or a lost executor would; the driver hears only that the task died.

With ``"hold": dir`` (``before_commit``, ``after_commit``) the first attempt to get
there writes its pid to ``dir/held`` and waits until ``dir/go`` exists (the test
freezes it meanwhile); around a commit it then writes what the commit did to
``dir/outcome``: ``committed``, or the error that refused it.  With ``"after_commits": dir`` every task's commit leaves a mark in ``dir``, and
the faulted task, before its sleep, waits (up to 120 s) until another task has
committed: on a loaded machine a fixed sleep alone let the fault strike before any
commit.  Run by every Python that starts with this directory on its path; does
nothing where no Spark task runs."""

import json
import os
import time

_SPEC = os.environ.get("CYKAFKA_FAULT")


def _hit(spec: dict) -> bool:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx is not None and ctx.attemptNumber() == 0 and ctx.partitionId() in spec["tasks"]


def _die(spec: dict) -> None:
    marks = spec.get("after_commits")
    if marks:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(
            n.startswith("committed.") for n in os.listdir(marks)
        ):
            time.sleep(0.05)
    time.sleep(spec.get("sleep", 0))
    if spec.get("exit"):
        os._exit(137)


def _hold(spec: dict) -> bool:
    """True for the one attempt that holds (see the module docs), once released."""
    d = spec["hold"]
    mine = os.path.join(d, f"held.{os.getpid()}")
    with open(mine, "w") as f:
        f.write(str(os.getpid()))
    try:
        os.link(mine, os.path.join(d, "held"))  # atomic: only the first attempt holds
    except FileExistsError:
        return False
    finally:
        os.unlink(mine)
    while not os.path.exists(os.path.join(d, "go")):
        time.sleep(0.05)
    return True


def _outcome(spec: dict, what: str) -> None:
    with open(os.path.join(spec["hold"], "outcome.tmp"), "w") as f:
        f.write(what)
    os.rename(os.path.join(spec["hold"], "outcome.tmp"), os.path.join(spec["hold"], "outcome"))


def _install(spec: dict) -> None:
    from cykafka.producer import Producer

    if spec["when"] == "after_rows":
        produce_batch = Producer.produce_batch
        sent: dict[tuple[int, int], int] = {}

        def counted(self, topic, values, *args, **kwargs):  # type: ignore[no-untyped-def]
            fut = produce_batch(self, topic, values, *args, **kwargs)
            if _hit(spec):
                from pyspark import TaskContext

                ctx = TaskContext.get()
                at = (ctx.stageId(), ctx.partitionId())
                sent[at] = sent.get(at, 0) + len(values)
                if sent[at] >= spec["rows"]:
                    self.flush()  # the rows so far are written: then the worker dies
                    _die(spec)
            return fut

        Producer.produce_batch = counted  # type: ignore[method-assign]
        return

    commit = Producer.commit_transaction

    def commit_transaction(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        fault = _hit(spec)
        held = False
        if fault and spec["when"] == "before_commit":
            if "hold" in spec:
                held = _hold(spec)
            else:
                _die(spec)
        try:
            commit(self, *args, **kwargs)
        except Exception as e:
            if held:
                _outcome(spec, f"{type(e).__name__} {getattr(e, 'name', '')}: {e}")
            raise
        if held:
            _outcome(spec, "committed")
        if spec.get("after_commits"):
            from pyspark import TaskContext

            ctx = TaskContext.get()
            if ctx is not None:
                mark = f"committed.{ctx.stageId()}.{ctx.partitionId()}.{ctx.attemptNumber()}"
                open(os.path.join(spec["after_commits"], mark), "w").close()
        if fault and spec["when"] == "after_commit":
            if "hold" in spec:
                if _hold(spec):
                    _outcome(spec, "committed")
            else:
                _die(spec)

    Producer.commit_transaction = commit_transaction  # type: ignore[method-assign]


if _SPEC:
    _install(json.loads(_SPEC))
