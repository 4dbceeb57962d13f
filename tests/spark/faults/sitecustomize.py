"""Fault injection for Spark's Python workers (on ``PYTHONPATH`` of a Spark driver that
tests/spark/eo_job.py runs; the workers inherit it).

``CYKAFKA_FAULT`` is JSON: ``{"tasks": [partition ids], "when": "after_commit" |
"before_commit" | "after_rows", "rows": n, "sleep": seconds, "exit": true}``.  In
attempt 0 of the named Spark partitions: around the first ``commit_transaction`` of
the task (``after_commit``, ``before_commit``), or once the task has handed ``rows``
rows to ``produce_batch`` and flushed them (``after_rows``: they are in the topic),
sleep, then (with ``exit``) kill the worker with ``os._exit(137)``, as the kernel's
OOM killer or a lost executor would; the driver hears only that the task died.  Run by
every Python that starts with this directory on its path; does nothing where no Spark
task runs."""

import json
import os
import time

_SPEC = os.environ.get("CYKAFKA_FAULT")


def _hit(spec: dict) -> bool:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx is not None and ctx.attemptNumber() == 0 and ctx.partitionId() in spec["tasks"]


def _die(spec: dict) -> None:
    time.sleep(spec.get("sleep", 0))
    if spec.get("exit"):
        os._exit(137)


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
        if fault and spec["when"] == "before_commit":
            _die(spec)
        commit(self, *args, **kwargs)
        if fault and spec["when"] == "after_commit":
            _die(spec)

    Producer.commit_transaction = commit_transaction  # type: ignore[method-assign]


if _SPEC:
    _install(json.loads(_SPEC))
