"""What write_kafka's JSON rows hold for values JSON has no spelling for: NaN and the
infinities are the strings Spark's own to_json writes, at any depth."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F

from cykafka.spark import write_kafka

pytestmark = pytest.mark.parametrize("spark", ["local"], indirect=True)


def test_nan_and_infinities_are_written_as_spark_writes_them(spark, broker, topic, read_back):
    name = topic()
    df = spark.sql(
        "select id, case id when 0 then double('NaN') when 1 then double('Infinity') "
        "when 2 then -double('Infinity') else 1.5 end as x, "
        "array(named_struct('y', case when id = 0 then float('NaN') else float(2) end)) as ys "
        "from range(4)"
    )
    report = write_kafka(df, name, bootstrap_servers=broker.bootstrap_servers, value=None)
    assert report.ok and report.delivered == 4
    got = sorted((json.loads(r.value) for r in read_back(broker.bootstrap_servers, name,
                 expected=4)[0]), key=lambda d: d["id"])  # fmt: skip
    spark_json = [
        json.loads(r.j)
        for r in df.orderBy("id").select(F.to_json(F.struct(*df.columns)).alias("j")).collect()
    ]
    assert got == spark_json
    assert [g["x"] for g in got] == ["NaN", "Infinity", "-Infinity", 1.5]
    assert got[0]["ys"] == [{"y": "NaN"}]
