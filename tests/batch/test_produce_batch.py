"""The bulk path: produce_batch and produce_many against the real broker."""

from __future__ import annotations

import asyncio
import datetime
import pickle
import time
import zlib

import numpy as np
import pyarrow as pa
import pytest

import cykafka


@pytest.fixture
def producer(broker):
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        yield p


def test_list_batch_read_back_in_order(producer, broker, topic, read_back) -> None:
    name = topic(partitions=3)
    values = [f"value-{i}".encode() for i in range(20_000)]
    keys = [f"k{i % 11}" for i in range(20_000)]
    report = producer.produce_batch(name, values, keys).result(60)
    assert isinstance(report, cykafka.BatchReport)
    assert report.ok and report.delivered == 20_000 and report.failed == 0
    recs = read_back(broker.bootstrap_servers, name, expected=20_000)
    for part, rs in recs.items():
        assert report.first_offsets[part] == rs[0].offset
        assert report.last_offsets[part] == rs[-1].offset
        # Within a key, log order is batch order.
        by_key: dict[bytes, list[int]] = {}
        for r in rs:
            by_key.setdefault(r.key, []).append(int(r.value.split(b"-")[1]))
        assert all(v == sorted(v) for v in by_key.values())
    assert sorted(r.value for rs in recs.values() for r in rs) == sorted(values)


def test_arrow_with_nulls_slices_and_chunks_byte_exact(producer, broker, topic, read_back) -> None:
    name = topic()
    raw = [b"a", None, b"", "ünï".encode(), bytes(range(256)), None, b"z" * 1000]
    chunked = pa.chunked_array([pa.array(raw[:3], pa.binary()), pa.array(raw[3:], pa.binary())])
    keys = pa.array(["k0", "k1", None, "k3", "k4", "k5", None], pa.large_string())
    report = producer.produce_batch(name, chunked, keys).result(30)
    assert report.ok
    # A sliced large_binary array (offset != 0) reads from the right place.
    sliced = pa.array([b"skip", b"s1", None, b"s3"], pa.large_binary()).slice(1, 3)
    assert producer.produce_batch(name, sliced).result(30).ok
    fixed = pa.array([b"ab", b"cd"], pa.binary(2))
    assert producer.produce_batch(name, fixed, pa.array(["x", "y"])).result(30).ok
    recs = read_back(broker.bootstrap_servers, name, expected=12)[0]
    assert [r.value for r in recs] == raw + [b"s1", None, b"s3", b"ab", b"cd"]
    assert [r.key for r in recs[:7]] == [b"k0", b"k1", None, b"k3", b"k4", b"k5", None]
    assert [r.key for r in recs[10:]] == [b"x", b"y"]


def test_lines_and_their_slices_byte_exact(producer, broker, topic, read_back) -> None:
    """cykafka._codecs.Lines (Arrow's binary layout without pyarrow, what the lines
    import sends) as values and keys, whole and sliced."""
    from cykafka._codecs import lines

    name = topic()
    text = b"".join(b"line %d\r\n" % i if i % 3 else b"\xff\x00%d\n" % i for i in range(3000))
    text += b"\n"  # an empty last line
    values = lines(text)
    keys = lines(b"".join(b"k%d\n" % (i % 7) for i in range(len(values))))
    assert producer.produce_batch(name, values, keys).result(60).ok
    assert producer.produce_batch(name, values[1000:1500], keys[1000:1500]).result(60).ok
    recs = read_back(broker.bootstrap_servers, name, expected=len(values) + 500)[0]
    want = values.to_pylist() + values.to_pylist()[1000:1500]
    assert [r.value for r in recs] == want
    assert [r.key for r in recs] == keys.to_pylist() + keys.to_pylist()[1000:1500]
    assert values[-1] == b"" and want[1] == b"line 1" and want[3] == b"\xff\x003"


def test_numpy_fixed_width_and_object_arrays(producer, broker, topic, read_back) -> None:
    name = topic()
    arr = np.array([b"one", b"two", b"six"], dtype="S3")
    assert (
        producer.produce_batch(name, arr, np.array([b"k", None, "s"], dtype=object)).result(30).ok
    )
    recs = read_back(broker.bootstrap_servers, name, expected=3)[0]
    assert [(r.key, r.value) for r in recs] == [(b"k", b"one"), (None, b"two"), (b"s", b"six")]
    with pytest.raises(TypeError, match="dtype float64"):
        producer.produce_batch(name, np.zeros(3))


def test_numpy_fixed_width_items_ending_in_nul_are_refused(
    producer, broker, topic, read_back
) -> None:
    """NumPy pads 'S' items with NUL bytes and drops trailing NULs when it reads one
    (``np.array([b"\\x00"])[0] == b""``): a value ending in NUL cannot be told from
    padding.  Such an array is refused before anything is queued, naming the column,
    the item and the alternatives; items that fill their width with a non-NUL last byte
    are sent exactly, NUL bytes inside included."""
    import pyarrow as pa

    name = topic()
    refused = [
        ("values", np.array([b"abc", b"\x00"]), 1),  # b"\x00" stored as b"\x00\x00\x00"
        ("values", np.array([b"abc\x00\x00", b"defgh"]), 0),
        ("values", np.array([b"abc", b"a"]), 1),  # padded: b"a" or b"a\x00"?
        ("keys", np.array([b"k1", b"k\x00"]), 1),
    ]
    for what, arr, at in refused:
        values, keys = (arr, None) if what == "values" else ([b"v", b"w"], arr)
        with pytest.raises(ValueError) as info:
            producer.produce_batch(name, values, keys)
        text = str(info.value)
        assert text.startswith(f"{what}[{at}]: NumPy 'S{arr.dtype.itemsize}' item"), text
        assert "astype(object)" in text and "pa.binary()" in text, text
        assert len(producer) == 0
    exact = [b"\x00\xffab", b"abcd", b"\x00\x00\x01\x02"]
    as_arrow = [b"\x00", b"abc\x00\x00"]  # the alternative: lengths carried
    producer.produce_batch(name, np.array(exact, dtype="S4")).result(30).raise_if_failed()
    producer.produce_batch(name, pa.array(as_arrow, pa.binary())).result(30).raise_if_failed()
    recs = read_back(broker.bootstrap_servers, name, expected=5)[0]
    assert [r.value for r in recs] == exact + as_arrow


def test_mixed_good_and_bad_messages_are_all_accounted(broker, topic, read_back) -> None:
    name = topic(partitions=2)
    conf = {"bootstrap.servers": broker.bootstrap_servers, "message.max.bytes": 10_000}
    values = [b"ok"] * 10 + [b"x" * 50_000] + [b"ok"] * 10
    partitions = [0] * 5 + [7] + [1] * 15  # index 5: a partition the topic lacks
    with cykafka.Producer(conf) as p:
        p.produce(name, b"warm-up", partition=0).result(
            10
        )  # metadata known: partition 7 is refused
        report = p.produce_batch(name, values, partitions=partitions).result(30)
    assert report.delivered + report.failed == len(values)
    assert report.failed == 2 and report.delivered == 19
    failed = {i: e.name for i, e in report.errors}
    assert failed == {5: "_UNKNOWN_PARTITION", 10: "MSG_SIZE_TOO_LARGE"}
    assert not report.ok
    with pytest.raises(cykafka.KafkaDeliveryError, match="2 of 21 messages"):
        report.raise_if_failed()
    recs = read_back(broker.bootstrap_servers, name, expected=20)
    assert len(recs[0]) == 1 + 5 and len(recs[1]) == 15 - 1  # warm-up + 0..4; 6..20 but 10


def test_bad_input_is_refused_before_anything_is_queued(producer, topic) -> None:
    name = topic()
    with pytest.raises(ValueError, match="keys has 2 elements but values has 3"):
        producer.produce_batch(name, [b"a", b"b", b"c"], [b"k", b"k"])
    with pytest.raises(ValueError, match="partitions has 1 elements"):
        producer.produce_batch(name, [b"a", b"b"], partitions=[0])
    with pytest.raises(TypeError, match=r"values\[2\] must be bytes"):
        producer.produce_batch(name, [b"a", "b", 3, b"d"])
    with pytest.raises(TypeError, match=r"keys\[1\]"):
        producer.produce_batch(name, [b"a", b"b"], [b"k", object()])
    with pytest.raises(ValueError, match=r"partitions\[1\]"):
        producer.produce_batch(name, [b"a", b"b"], partitions=[0, -3])
    with pytest.raises(TypeError, match=r"headers\[1\]"):
        producer.produce_batch(name, [b"a", b"b"], headers=[None, [("h", 5)]])
    with pytest.raises(ValueError, match=r"headers\[1\]\[0\] name is a str that cannot be"):
        producer.produce_batch(name, [b"a", b"b"], headers=[None, [("\ud800", b"x")]])
    with pytest.raises(ValueError, match=r"values\[1\] is a str that cannot be encoded"):
        producer.produce_many(["a", "\ud800"], name)
    with pytest.raises(TypeError, match="not a single bytes"):
        producer.produce_batch(name, b"abc")
    with pytest.raises(TypeError, match="Arrow type int64"):
        producer.produce_batch(name, pa.array([1, 2]))
    assert len(producer) == 0
    # Only produce_many's two records were read (from its iterator): reported failed.
    assert producer._counters()["produced"] == producer._counters()["failed"] == 2


def test_headers_timestamps_and_on_delivery(producer, broker, topic, read_back) -> None:
    name = topic()
    calls: list[tuple[int, object, int]] = []
    report = producer.produce_batch(
        name,
        [b"a", b"b", b"c"],
        timestamps=[1_000, 2_000, None],
        headers=[[("h", b"1")], None, {"x": "y"}],
        on_delivery=lambda i, err, md: calls.append((i, err, md.offset)),
    ).result(30)
    assert report.ok and sorted(i for i, _, _ in calls) == [0, 1, 2]
    assert all(err is None for _, err, _ in calls)
    recs = read_back(broker.bootstrap_servers, name, expected=3)[0]
    assert [r.headers for r in recs] == [[("h", b"1")], [], [("x", b"y")]]
    assert [r.timestamp for r in recs[:2]] == [1_000, 2_000]


def test_timestamp_columns_arrow_and_numpy(producer, broker, topic, read_back) -> None:
    # Arrow timestamps of any unit and zone become whole milliseconds (truncated);
    # nulls mean "now"; a 0 is refused with its index
    name = topic()
    arrow = pa.array([1_600_000_000_123_999, None], pa.timestamp("us", "Europe/Paris"))
    utc = pa.array([1_600_000_000_456_789_000, None], pa.timestamp("ns", "UTC"))
    before = int(time.time() * 1000)
    assert producer.produce_batch(name, [b"a", b"b"], timestamps=arrow).result(30).ok
    assert producer.produce_batch(name, [b"c", b"d"], timestamps=utc).result(30).ok
    recs = read_back(broker.bootstrap_servers, name, expected=4)[0]
    assert [r.value for r in recs] == [b"a", b"b", b"c", b"d"]
    assert recs[0].timestamp == 1_600_000_000_123 and recs[2].timestamp == 1_600_000_000_456
    assert all(before <= recs[i].timestamp <= int(time.time() * 1000) for i in (1, 3))
    with pytest.raises(ValueError, match=r"timestamps\[1\] is 0"):
        producer.produce_batch(
            name, [b"x", b"y"], timestamps=pa.array([5, 0], pa.timestamp("ms", "UTC"))
        )
    with pytest.raises(TypeError, match=r"timestamps\[0\] must be an int.*not float"):
        producer.produce_batch(name, [b"x"], timestamps=[1.5e12])
    assert len(producer) == 0


def test_million_messages_through_a_small_queue(broker, topic) -> None:
    name = topic(partitions=2)
    conf = {"bootstrap.servers": broker.bootstrap_servers, "queue.buffering.max.messages": 5_000}
    with cykafka.Producer(conf) as p:
        report = p.produce_batch(name, [b"x" * 100] * 1_000_000).result(300)
        assert report.delivered == 1_000_000 and report.failed == 0
        assert p._counters()["blocked_seconds"] > 0  # it waited for room, not failed
        sizes = {
            part: report.last_offsets[part] - report.first_offsets[part] + 1
            for part in report.last_offsets
        }
        assert sum(sizes.values()) == 1_000_000


def test_produce_many_streams_records(producer, broker, topic, read_back) -> None:
    name = topic(partitions=2)

    def records():
        for i in range(2_500):
            if i % 3 == 0:
                yield f"plain-{i}"
            elif i % 3 == 1:
                yield (f"k{i}".encode(), f"tuple-{i}".encode())
            else:
                yield {"value": f"dict-{i}", "key": "d", "partition": 1, "headers": [("i", str(i))]}

    report = producer.produce_many(records(), topic=name, chunk_size=100).result(30)
    assert report.total == 2_500 and report.ok
    recs = read_back(broker.bootstrap_servers, name, expected=2_500)
    dicts = [r for r in recs[1] if r.value.startswith(b"dict-")]
    assert len(dicts) == 833 and all(r.key == b"d" for r in dicts)
    idx = [int(r.value.split(b"-")[1]) for r in dicts]
    assert idx == sorted(idx) and dicts[0].headers == [("i", b"2")]


def test_produce_many_bad_record_names_its_index_and_keeps_the_rest(producer, topic) -> None:
    name = topic()
    recs = [b"ok"] * 150 + [3.14] + [b"never"] * 10
    with pytest.raises(TypeError, match="record 150") as info:
        producer.produce_many(recs, topic=name, chunk_size=100)
    # The first chunk was queued before the bad record was read: it is reported.
    # The first chunk was queued before the bad record was read and is delivered; the
    # 50 good records read with the bad one are reported failed, not dropped.
    report = info.value.batch.result(30)
    assert report.total == 151 and report.delivered == 100 and report.failed == 51
    assert [i for i, _ in report.errors] == list(range(100, 151))
    assert "record 150" in str(report.errors[0][1])


def test_produce_many_bad_record_deep_in_a_chunk_drops_nothing(producer, topic) -> None:
    # The bad record is the 5,001st of the second chunk: the 5,000 before it were
    # read from the iterator and must end delivered or reported.
    name = topic()
    # A record of the wrong shape stops the reading at once; a value of the wrong
    # type is found when the chunk's columns are built, after the chunk was read.
    for bad, what, read in (
        (3.14, "record 15000", 15_001),
        ({"value": 5}, r"values\[15000\]", 15_011),
    ):
        recs = iter([b"ok"] * 15_000 + [bad] + [b"later"] * 10)
        with pytest.raises(TypeError, match=what) as info:
            producer.produce_many(recs, topic=name, chunk_size=10_000)
        report = info.value.batch.result(30)
        assert report.delivered == 10_000, report
        assert report.delivered + report.failed == report.total == read, report
        assert [i for i, _ in report.errors] == list(range(10_000, read))
        assert len(list(recs)) == 15_011 - read  # the rest is left in the iterator


def test_unordered_and_wrong_shaped_inputs_are_refused(producer, topic) -> None:
    name = topic()
    cases = [
        (lambda: producer.produce_batch(name, {b"a", b"b"}), TypeError, "values.*set"),
        (lambda: producer.produce_batch(name, frozenset([b"a"])), TypeError, "values.*frozenset"),
        (lambda: producer.produce_batch(name, {b"a": b"b"}), TypeError, "values.*dict"),
        (lambda: producer.produce_batch(name, {b"a": 1}.keys()), TypeError, "values.*dict_keys"),
        (lambda: producer.produce_batch(name, [b"a"], {b"k"}), TypeError, "keys.*set"),
        (lambda: producer.produce_batch(name, [b"a"], partitions={0}), TypeError, "partitions"),
        (lambda: producer.produce_batch(name, [b"a"], timestamps={1}), TypeError, "timestamps"),
        (lambda: producer.produce_many("abc", name), TypeError, "records.*str"),
        (lambda: producer.produce_many(b"abc", name), TypeError, "records.*bytes"),
        (lambda: producer.produce_many({b"a", b"b"}, name), TypeError, "records.*set"),
        (lambda: producer.produce_many(5, name), TypeError, "records.*int"),
        (
            lambda: producer.produce_batch(name, pa.table({"v": [b"a"]})),
            TypeError,
            r"values is a pyarrow Table.*column",
        ),
        (
            lambda: producer.produce_batch(name, pa.record_batch({"v": [b"a"]})),
            TypeError,
            r"values is a pyarrow RecordBatch",
        ),
        (
            lambda: producer.produce_batch(name, [b"a"], pa.table({"k": [b"a"]})),
            TypeError,
            r"keys is a pyarrow Table",
        ),
        (
            lambda: producer.produce_many(pa.table({"v": [b"a"]}), name),
            TypeError,
            r"records is a pyarrow Table",
        ),
    ]
    for call, exc, words in cases:
        with pytest.raises(exc, match=words):
            call()
    assert len(producer) == 0 and producer._counters()["produced"] == 0


def test_naive_timestamps_are_refused_everywhere(producer, topic) -> None:
    # One rule for every form: a timestamp must name its instant.  A naive datetime,
    # a naive Arrow timestamp and a NumPy datetime64 (which has no zone) are refused
    # alike, with the fix in the message.
    name = topic()
    naive = datetime.datetime(2020, 1, 1)
    with pytest.raises(ValueError, match="timestamp is a naive datetime"):
        producer.produce(name, b"v", timestamp=naive)
    with pytest.raises(ValueError, match=r"timestamps\[0\] is a naive datetime"):
        producer.produce_batch(name, [b"v"], timestamps=[naive])
    with pytest.raises(ValueError, match=r"timestamps: a naive Arrow timestamp.*tz"):
        producer.produce_batch(name, [b"v"], timestamps=pa.array([5], pa.timestamp("ms")))
    nump = np.array(["2020-09-13T12:26:40.456789"], dtype="datetime64[us]")
    with pytest.raises(ValueError, match=r"timestamps: NumPy datetime64 has no time zone"):
        producer.produce_batch(name, [b"v"], timestamps=nump)
    with pytest.raises(ValueError, match=r"timestamps\[0\] is a naive datetime"):
        producer.produce_many([{"value": b"v", "timestamp": naive}], name)
    assert producer._counters()["produced"] == producer._counters()["failed"] == 1


def test_batch_future_is_awaitable(producer, topic) -> None:
    name = topic()

    async def main() -> cykafka.BatchReport:
        return await producer.produce_batch(name, [b"a"] * 1000)

    assert asyncio.run(main()).delivered == 1000


def test_empty_batch_completes(producer, topic) -> None:
    report = producer.produce_batch(topic(), []).result(1)
    assert report.total == 0 and report.ok


def _partition_of_each_key(conf: dict, name: str, keys: list[bytes]) -> dict[bytes, int]:
    """Where librdkafka itself puts each key: one produce() per distinct key."""
    with cykafka.Producer(conf) as p:
        futs = {k: p.produce(name, b"probe", key=k) for k in dict.fromkeys(keys)}
        return {k: f.result(30).partition for k, f in futs.items()}


@pytest.mark.parametrize(
    "partitioner", ["consistent_random", "murmur2_random", "fnv1a", "consistent"]
)
def test_keyed_batch_keeps_batch_order_in_each_partition(
    broker, topic, read_back, partitioner
) -> None:
    name, probe = topic(partitions=4), topic(partitions=4)
    conf = {"bootstrap.servers": broker.bootstrap_servers, "partitioner": partitioner}
    n = 30_000
    keys = [b"user-%d" % ((i * 7919) % 997) for i in range(n)]
    values = [b"%d" % i for i in range(n)]
    where = _partition_of_each_key(conf, probe, keys)
    assert len(set(where.values())) == 4
    seen: dict[int, tuple[int, int]] = {}
    with cykafka.Producer(conf) as p:
        report = p.produce_batch(
            name,
            values,
            keys,
            on_delivery=lambda i, err, md: seen.__setitem__(i, (md.partition, md.offset)),
        ).result(60)
        grouped = p._counters()["grouped"]
    # consistent/fnv1a hash every key; the *_random ones too, as no key is null or empty.
    assert grouped == n
    assert report.ok and report.delivered == n and sorted(seen) == list(range(n))
    recs = read_back(broker.bootstrap_servers, name, expected=n)
    for part, rs in recs.items():
        order = [int(r.value) for r in rs]
        assert order == sorted(order), f"partition {part} is not in batch order"
        assert all(where[r.key] == part for r in rs)
        assert (report.first_offsets[part], report.last_offsets[part]) == (
            rs[0].offset,
            rs[-1].offset,
        )
        # on_delivery's index names the message that sits at that offset.
        assert all(seen[int(r.value)] == (part, r.offset) for r in rs)


def test_explicit_partitions_and_null_keys_keep_batch_order(
    producer, broker, topic, read_back
) -> None:
    name = topic(partitions=3)
    n = 9_000
    # First batch: explicit partition 0 for every third message, keys for the rest, some
    # null; consistent_random spreads null keys at random, so that batch goes as given.
    # Second batch: every partition explicit, so it is grouped.
    parts = [i % 3 if i % 3 == 0 else None for i in range(n)]
    keys = [None if i % 1000 == 999 else b"k%d" % (i % 50) for i in range(n)]
    r1 = producer.produce_batch(
        name, [b"a%d" % i for i in range(n)], keys, partitions=parts
    ).result(60)
    assert producer._counters()["grouped"] == 0  # a null key without a partition
    r2 = producer.produce_batch(
        name, [b"b%d" % i for i in range(n)], keys, partitions=[i % 3 for i in range(n)]
    ).result(60)
    assert producer._counters()["grouped"] == n  # every partition explicit
    assert r1.ok and r2.ok
    recs = read_back(broker.bootstrap_servers, name, expected=2 * n)
    for rs in recs.values():
        for batch in (b"a", b"b"):
            order = [int(r.value[1:]) for r in rs if r.value[:1] == batch]
            assert order == sorted(order)
    # Explicit partitions were honoured.
    got = {int(r.value[1:]): p for p, rs in recs.items() for r in rs if r.value[:1] == b"a"}
    assert all(got[i] == 0 for i in range(0, n, 3))


def test_refused_messages_in_a_grouped_batch_keep_their_index(broker, topic) -> None:
    name = topic(partitions=4)
    conf = {"bootstrap.servers": broker.bootstrap_servers, "message.max.bytes": 10_000}
    n = 5_000
    big = {17, 1_234, 4_999}
    values = [b"x" * 50_000 if i in big else b"%d" % i for i in range(n)]
    keys = [b"key-%d" % (i % 101) for i in range(n)]
    with cykafka.Producer(conf) as p:
        report = p.produce_batch(name, values, keys).result(60)
    assert report.delivered == n - len(big)
    assert {i: e.name for i, e in report.errors} == dict.fromkeys(big, "MSG_SIZE_TOO_LARGE")


@pytest.mark.broker  # librdkafka's mock cluster
def test_max_block_in_a_grouped_batch_fails_a_suffix_of_each_partition() -> None:
    """The queue fills mid-batch and max.block.ms runs out: what was handed over is,
    per partition, a prefix of that partition's messages (no gaps), and every other
    message fails with "not queued" under its own index."""
    from cykafka.testing import MockCluster

    with MockCluster(num_brokers=1) as mock:
        name = mock.create_topic("grouped", partitions=4)
        conf = {
            "bootstrap.servers": mock.bootstrap_servers,
            "queue.buffering.max.messages": 1_000,
            "max.block.ms": 300,
            "message.timeout.ms": 60_000,
        }
        n = 4_000
        keys = [b"key-%d" % (i % 97) for i in range(n)]
        delivered: dict[int, int] = {}
        with cykafka.Producer(conf) as p:
            assert p.produce_batch(name, [b"w"] * 300, keys[:300]).result(30).ok
            # Every Produce request now fails (retriably), so the queue stays full; the
            # broker still answers metadata, so the batch is grouped.
            mock.push_request_errors("Produce", ["NOT_ENOUGH_REPLICAS"] * 1000)
            with pytest.raises(cykafka.QueueFullError) as info:
                p.produce_batch(
                    name,
                    [b"%d" % i for i in range(n)],
                    keys,
                    on_delivery=lambda i, err, md: (
                        err is None and delivered.__setitem__(i, md.partition)
                    ),
                )
            mock.clear_request_errors("Produce")
            report = info.value.batch.result(60)
            assert p._counters()["grouped"] == 300 + min(n, 65_536)
        failed = {i for i, _ in report.errors}
        assert report.delivered + report.failed == n
        assert failed.isdisjoint(delivered) and failed | set(delivered) == set(range(n))
        assert len(delivered) == 1_000  # the queue's room, then max.block.ms
        assert all("not queued" in str(e) for _, e in report.errors)
        # consistent_random: CRC32 of the key modulo the partition count.
        part_of = [zlib.crc32(k) % 4 for k in keys]
        assert all(part_of[i] == part for i, part in delivered.items())
        for part in range(4):
            msgs = [i for i in range(n) if part_of[i] == part]
            handed = sorted(i for i in delivered if part_of[i] == part)
            assert handed == msgs[: len(handed)], f"partition {part} has a gap"


@pytest.mark.broker  # librdkafka's mock cluster
def test_one_failing_report_does_not_abandon_the_rest_of_a_batch() -> None:
    # Logging a raising on_delivery can itself raise (a broken logging filter); the
    # report loop used to stop there, so the batch never completed.
    import logging

    from cykafka.testing import MockCluster

    class Broken(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            if "on_delivery callback raised" in record.getMessage():
                raise RuntimeError("the logging setup is broken")
            return True

    def bad(index: int, err: object, md: object) -> None:
        raise ValueError("user callback")

    logger = logging.getLogger("cykafka")
    broken = Broken()
    with MockCluster(num_brokers=1) as mock:
        name = mock.create_topic("dr", partitions=1)
        with cykafka.Producer({"bootstrap.servers": mock.bootstrap_servers}) as p:
            assert p.produce_batch(name, [b"warm-up"]).result(10).ok
            logger.addFilter(broken)
            try:
                bf = p.produce_batch(name, [b"x"] * 1_000, on_delivery=bad)
                report = bf.result(
                    60
                )  # a hang guard; 1,000 logged tracebacks are slow under valgrind
            finally:
                logger.removeFilter(broken)
            assert len(p) == 0
    assert report.total == 1_000 and report.delivered + report.failed == 1_000


def test_many_failures_are_kept_compact_and_read_like_a_list(broker, topic) -> None:
    # 30,000 refused messages (too large) between delivered ones: the report lists
    # every failure by index, in index order, as (index, KafkaDeliveryError) pairs;
    # failures with the same cause share one exception object.
    name = topic(partitions=2)
    conf = {"bootstrap.servers": broker.bootstrap_servers, "message.max.bytes": 10_000}
    n = 40_000
    big = b"x" * 20_000
    values = [b"ok" if i % 4 == 0 else big for i in range(n)]
    keys = [b"k%d" % (i % 7) for i in range(n)]
    with cykafka.Producer(conf) as p:
        report = p.produce_batch(name, values, keys).result(60)
    assert report.delivered == 10_000 and report.failed == 30_000
    errs = report.errors
    assert len(errs) == 30_000 and bool(errs)
    assert [i for i, _ in errs] == [i for i in range(n) if i % 4]
    assert errs[0][0] == 1 and errs[-1][0] == n - 1 and errs[2][0] == 3
    assert [i for i, _ in errs[:3]] == [1, 2, 3] and len(errs[-5:]) == 5
    assert all(e.name == "MSG_SIZE_TOO_LARGE" for _, e in errs[::1000])
    assert len({id(e) for _, e in errs}) == 1
    with pytest.raises(IndexError):
        errs[30_000]
    d = report.to_dict()
    assert len(d["errors"]) == 30_000 and d["errors"][0][:2] == (1, "MSG_SIZE_TOO_LARGE")
    copy = pickle.loads(pickle.dumps(report))  # e.g. a report sent back from a worker
    assert [(i, e.name) for i, e in copy.errors] == [(i, e.name) for i, e in errs]
    with pytest.raises(cykafka.KafkaDeliveryError, match="30000 of 40000.*first: message 1"):
        report.raise_if_failed()


@pytest.mark.parametrize("partitions", [1, 3])
def test_a_transactional_batch_commits_and_aborts_whole(
    broker, topic, partitions, committed
) -> None:
    """Batches are handed over in calls of many messages; each partition they reach,
    named or picked by librdkafka, is added to the transaction: a commit makes every
    message visible, an abort none."""
    name = topic(partitions=partitions)
    conf = {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"tx-{name}"}
    with cykafka.Producer(conf, preset="exactly_once") as p:
        p.init_transactions(10)
        for commit, tag in ((True, b"kept"), (False, b"dropped"), (True, b"keyed")):
            p.begin_transaction()
            keys = [b"%d" % (i % 7) for i in range(3000)] if tag == b"keyed" else None
            report = p.produce_batch(name, [tag + b"-%d" % i for i in range(3000)], keys)
            assert report.result(30).delivered == 3000
            (p.commit_transaction if commit else p.abort_transaction)(10)
    seen = [r.value for r in committed(broker.bootstrap_servers, name, partitions)]
    assert sorted(seen) == sorted(
        [b"kept-%d" % i for i in range(3000)] + [b"keyed-%d" % i for i in range(3000)]
    )
