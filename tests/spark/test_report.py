"""WriteReport's account of task retries, from TaskResults as the executors send them
(tests/spark/test_task_retry.py kills real workers; these cover what it cannot reach:
a write whose ends could not be measured, and a retry that wrote nothing again)."""

from __future__ import annotations

from cykafka.spark.report import TaskResult, WriteReport


def _report(attempts: list[int], units: int | None = None) -> WriteReport:
    report = WriteReport(topic="t", units=units)
    for task, attempt in enumerate(attempts):
        result = TaskResult(task, attempt, 1_000, 1_000, 0, [], {("t", task): (0, 999)})
        report.add(TaskResult.from_json(result.to_json()))  # as the driver gets it
    return report


def test_a_retry_not_measured_is_bounded_and_not_ok() -> None:
    report = _report([0, 1, 2])
    report.duplicates = None  # a topic column, or the log ends could not be read
    assert report.retried == 2 and report.duplicates_max == 3_000 and not report.ok
    assert "2 tasks retried without exactly_once: up to 3,000 rows may have been" in str(report)


def test_a_retry_measured_to_have_written_nothing_again_is_ok() -> None:
    report = _report([0, 1])
    report.duplicates = 0  # the failed attempt died before its first delivery
    assert report.retried == 1 and report.ok
    assert "1 task retried without exactly_once: 0 records" in str(report)


def test_retries_under_exactly_once_are_no_news() -> None:
    report = _report([1, 1], units=2)
    assert report.retried == 2 and report.duplicates_max == 0 and report.ok
    assert "retried" not in str(report)


def test_no_retry_says_nothing() -> None:
    report = _report([0, 0])
    assert report.retried == 0 and report.duplicates_max == 0 and report.ok
    assert "retried" not in str(report)
