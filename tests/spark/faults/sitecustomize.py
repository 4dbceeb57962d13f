"""Fault injection for Spark's Python workers (on ``PYTHONPATH`` of a Spark driver that
tests/spark/eo_job.py runs; the workers inherit it).

``CYKAFKA_FAULT`` is JSON: ``{"tasks": [partition ids], "when": "after_commit" |
"before_commit", "sleep": seconds, "exit": true}``.  In attempt 0 of the named Spark
partitions, around the first ``commit_transaction`` of the task: sleep, then (with
``exit``) kill the worker with ``os._exit(137)``, as the kernel's OOM killer or a lost
executor would; the driver hears only that the task died.  Run by every Python that
starts with this directory on its path; does nothing where no Spark task runs."""

import json
import os
import time

_SPEC = os.environ.get("CYKAFKA_FAULT")


def _install(spec: dict) -> None:
    from cykafka.producer import Producer

    commit = Producer.commit_transaction

    def hit() -> bool:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        return ctx is not None and ctx.attemptNumber() == 0 and ctx.partitionId() in spec["tasks"]

    def commit_transaction(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        fault = hit()
        if fault and spec["when"] == "before_commit":
            time.sleep(spec.get("sleep", 0))
            if spec.get("exit"):
                os._exit(137)
        commit(self, *args, **kwargs)
        if fault and spec["when"] == "after_commit":
            time.sleep(spec.get("sleep", 0))
            if spec.get("exit"):
                os._exit(137)

    Producer.commit_transaction = commit_transaction  # type: ignore[method-assign]


if _SPEC:
    _install(json.loads(_SPEC))
