"""The README's benchmark tables, rendered from one run's JSON (bench/run.py --json).

    python bench/readme_tables.py [bench/results/latest.json]

Prints Markdown tables: every line of the run (best msgs/s, median, ratio to its C
floor and to its confluent baseline, CPU seconds), the targets with their verdicts, and
the import comparisons (typed vs flat Parquet, lines vs kcat) and the comparisons with
the Java producer and Spark's own Kafka sink when those steps ran.
The README quotes them as printed, so its figures are those of one run.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

# Rows shown, in order, with their README labels; section headings as (None, text).
ROWS: list[tuple[str | None, str]] = [
    ("c_floor", "C floor: `rd_kafka_producev` loop"),
    ("cy_batch_list", "**cykafka `produce_batch`**, list of bytes"),
    ("cy_batch_arrow", "**cykafka `produce_batch`**, pyarrow array"),
    ("cy_futures", "**cykafka `produce()`**, a future each, all resolved"),
    ("cy_asyncio", "**cykafka under asyncio**, every future awaited"),
    ("ck_on_delivery", "confluent-kafka `produce(on_delivery=)` + `poll(0)` each"),
    ("ck_on_delivery_poll1000", "confluent-kafka `produce(on_delivery=)`, `poll(0)` every 1000"),
    ("ck_batch", "confluent-kafka `produce_batch` (list of dicts)"),
    ("ck_aio", "confluent-kafka `AIOProducer`"),
    (None, "*with `enable.idempotence=true`:*"),
    ("c_floor_idem", "C floor"),
    ("cy_batch_list_idem", "**cykafka `produce_batch`**, list"),
    ("cy_batch_arrow_idem", "**cykafka `produce_batch`**, pyarrow"),
    ("ck_on_delivery_idem", "confluent-kafka `produce(on_delivery=)`"),
    ("ck_batch_idem", "confluent-kafka `produce_batch`"),
    ("ck_aio_idem", "confluent-kafka `AIOProducer`"),
    (None, "*keyed: 1,000 keys over 4 partitions:*"),
    ("c_floor_keyed", "C floor (same loop with `RD_KAFKA_V_KEY`)"),
    ("cy_batch_list_keyed", "**cykafka `produce_batch`**, list, keys"),
    ("ck_on_delivery_keyed", "confluent-kafka `produce(key=, on_delivery=)`"),
    ("ck_batch_keyed", "confluent-kafka `produce_batch` with keys"),
]


def _ratio(value: float | None, bold: bool) -> str:
    if value is None:
        return ""
    return f"**{value:.2f}**" if bold else f"{value:.2f}"


def lines_table(res: dict[str, Any]) -> str:
    lines = res["lines"]
    out = [
        "| line | msgs/s | median | × C floor | × confluent | CPU s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, label in ROWS:
        if name is None:
            out.append(f"| {label} | | | | | |")
            continue
        ln = lines.get(name)
        if ln is None:
            continue
        ours = name.startswith("cy_")
        base = _ratio(ln.get("ratio_to_baseline"), ours)
        if base and name.startswith("cy_asyncio"):
            base += " (vs AIOProducer)"
        cpu = ln.get("best_cpu_seconds")
        out.append(
            f"| {label} | {ln['best_msgs_per_s']:,.0f} | {ln['median_msgs_per_s']:,.0f} "
            f"| {_ratio(ln.get('ratio_to_floor'), name.startswith('cy_batch'))} | {base} "
            f"| {'' if cpu is None else f'{cpu:.2f}'} |"
        )
    return "\n".join(out)


def targets_table(res: dict[str, Any]) -> str:
    out = ["| target (same run) | measured | |", "|---|---:|---|"]
    for t in res["targets"]:
        if "ratio" in t:
            pm = t.get("paired_median")
            shown = (
                f"{pm:.2f} (best runs: {t['ratio']:.2f})" if pm is not None else f"{t['ratio']:.2f}"
            )
        else:
            shown = t["shown"]
        sp = t.get("spread")
        if sp:
            shown += f" (rounds {sp[0]:.2f}–{sp[1]:.2f})"
        out.append(f"| {t['target']} | {shown} | {'pass' if t['pass'] else '**miss**'} |")
    return "\n".join(out)


def import_table(res: dict[str, Any]) -> str:
    """Typed and nested vs flat Parquet, and the lines import vs kcat (processes), from
    the ``import_typed`` and ``import_kcat`` steps; empty when neither ran."""
    etl = res.get("etl", {})
    typed, kc = etl.get("import_typed"), etl.get("import_kcat")
    out: list[str] = []
    if typed:
        out += [
            f"| Parquet, {typed['rows']:,} rows | JSON B/row | encoder alone, rows/s "
            "| `cykafka import` rows/s | C loop over the JSON, rows/s | import × C loop "
            "| import × flat | C loop × flat |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for kind, label in (
            ("flat", "flat: int64, string, double"),
            ("typed", "typed: + timestamp[us, UTC], decimal(12,2), dictionary, list, struct"),
            ("nested", "nested: + list<struct>, map, timestamp[ns]"),
        ):
            k = typed[kind]
            vs = "1.00" if kind == "flat" else f"{typed[f'{kind}_vs_flat_median']:.2f}"
            cvs = "1.00" if kind == "flat" else f"{typed[f'{kind}_c_floor_vs_flat_median']:.2f}"
            out.append(
                f"| {label} | {typed[f'{kind}_json_bytes_per_row']} "
                f"| {typed[f'{kind}_encode_rows_per_s']:,} "
                f"| {k['rows_per_s_median']:,} | {k['c_floor_rows_per_s_median']:,} "
                f"| **{k['ratio_to_c_floor_median']:.2f}** | {vs} | {cvs} |"
            )
    if kc:
        if out:
            out.append("")
        sides = (
            ("kcat", "kcat"),
            ("kcat_idempotent", "kcat idempotent"),
            ("kcat_same", "kcat, import's settings"),
            ("kcat_same_ordered", "kcat, import's settings, ordered"),
            ("cykafka_none", "cykafka `--preset none`"),
            ("cykafka", "cykafka (default: `ordered`)"),
        )
        ratios = (
            ("defaults_ratio", "defaults"),
            ("same_guarantee_ratio", "same guarantee"),
            ("same_settings_ratio", "same settings, none"),
            ("same_settings_ordered_ratio", "same settings, ordered"),
        )
        out += [
            "| lines, whole processes | "
            + " | ".join(label for _, label in sides)
            + " | "
            + " | ".join(f"× kcat, {label}" for _, label in ratios)
            + " |",
            "|---|" + "---:|" * (len(sides) + len(ratios)),
        ]
        for n, k in sorted(((int(n), v) for n, v in kc.items() if n.isdigit())):
            for unit, key in (("s", "seconds_median"), ("CPU s", "cpu_seconds_median")):
                got = k.get(key, {})
                cells = [f"{got[s]:.2f}" if s in got else "" for s, _ in sides]
                rs = [f"**{k[r]:.2f}**" if unit == "s" and r in k else "" for r, _ in ratios]
                out.append(f"| {n:,} lines ({unit}, median) | " + " | ".join(cells + rs) + " |")
        phased = [(int(n), v["cykafka_phases_s"]) for n, v in kc.items() if n.isdigit()]
        phased = [(n, ph) for n, ph in sorted(phased) if "hand_over" in ph]
        if phased:
            keys = list(phased[0][1])
            out += [
                "",
                "| where `cykafka import` (default) spends its wall time, s (median) | "
                + " | ".join(k.replace("_", " ") for k in keys)
                + " |",
                "|---|" + "---:|" * len(keys),
            ]
            for n, ph in phased:
                out.append(
                    f"| {n:,} lines | " + " | ".join(f"{ph.get(k, 0.0):.3f}" for k in keys) + " |"
                )
    return "\n".join(out)


def _int(value: float | None) -> str:
    return "" if value is None else f"{value:,.0f}"


def anchors_table(res: dict[str, Any]) -> str:
    """cykafka beside the Java producer (``java_anchor``) and Spark's own Kafka sink
    (``spark_anchor``), medians of the rounds; empty when neither step ran."""
    etl = res.get("etl") or {}
    ja = etl.get("java_anchor")
    out: list[str] = []
    if ja:
        out += [
            "| Java producer, 1 partition | Java ProducerPerformance, msgs/s "
            "| cykafka `produce_batch` | × Java | cykafka `produce()` futures | × Java "
            "| ProducerPerformance process, s | `cykafka import` process, s | × Java |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for broker, group, name, label, g in _java_groups(ja):
            bold = broker == ja.get("target_broker") and group == "same"
            java_s = g.get("java_process_s_median")
            out.append(
                f"| {name}, {label} | {_int(g.get('java_rows_per_s_median'))} "
                f"| {_int(g.get('cy_batch_rows_per_s_median'))} "
                f"| {_ratio(g.get('cy_batch_vs_java'), bold)} "
                f"| {_int(g.get('cy_futures_rows_per_s_median'))} "
                f"| {_ratio(g.get('cy_futures_vs_java'), bold)} "
                f"| {'' if java_s is None else f'{java_s:.2f}'} "
                f"| {g['import_process_s_median']:.2f} "
                f"| {_ratio(g.get('import_process_vs_java_process'), bold)} |"
            )
        out += ["", *_java_cpu_rows(ja)]
    lat = etl.get("latency")
    if lat:
        if out:
            out.append("")
        out += _latency_rows(lat)
    for sa in (etl.get("spark_anchor"), etl.get("spark_anchor_standalone")):
        if not sa:
            continue
        if out:
            out.append("")
        out += [
            f"| Spark sink, {sa['rows']:,} rows, {sa['spark']} | rows/s | × Spark's sink "
            "| CPU-s per M rows: Spark's JVM | Python workers | machine |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        sides = (
            ("spark_kafka", 'Spark\'s `df.write.format("kafka")`'),
            ("write_kafka_none", "**cykafka `write_kafka(preset=None)`**"),
            ("write_kafka_ordered", '**cykafka `write_kafka(preset="ordered")`**'),
            ("write_kafka_exactly_once", '**cykafka `write_kafka(preset="exactly_once")`**'),
        )
        for broker, name in (("apache_kafka", "Apache Kafka"), ("tansu", "Tansu")):
            b = sa.get(broker)
            if not b:
                continue
            for side, label in sides:
                r = b[side]
                ratio = b.get(f"{side}_vs_spark_kafka")
                bold = (
                    sa["spark"] == "local[2]"
                    and broker == sa.get("target_broker")
                    and side != "write_kafka_ordered"
                )
                out.append(
                    f"| {name}: {label} | {r['rows_per_s_median']:,} "
                    f"| {_ratio(ratio, bold)} | {r['jvm_cpu_s_per_million_rows']:.2f} "
                    f"| {r['python_cpu_s_per_million_rows']:.2f} "
                    f"| {r['machine_cpu_s_per_million_rows']:.2f} |"
                )
    return "\n".join(out)


def _java_groups(ja: dict[str, Any]) -> Iterator[tuple[str, str, str, str, dict[str, Any]]]:
    """(broker, group, broker's name, group's label, figures) of each setting group the
    Java comparison ran, in the tables' order."""
    for broker, name in (("apache_kafka", "Apache Kafka"), ("tansu", "Tansu")):
        for group, label in (("same", "same settings"), ("defaults", "each at its defaults")):
            g = ja.get(f"{broker}_{group}")
            if g:
                yield broker, group, name, label, g


def _spread_text(sp: list[float] | None) -> str:
    return f"{sp[0]:.2f}–{sp[1]:.2f}" if sp else ""


def _java_cpu_rows(ja: dict[str, Any]) -> list[str]:
    """Each side's rounds and CPU per million records beside the Java producer: the
    ratios' spread (lowest and highest round) and the processes' own accounting."""
    out = [
        "| Java producer, CPU-s per M records (process start to exit) | Java "
        "| `produce_batch` | futures | `import` | broker's share beside Java "
        "| beside `produce_batch` | `produce_batch` × Java, rounds | futures × Java, rounds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for _, _, name, label, g in _java_groups(ja):

        def cpu(side: str, g: dict[str, Any] = g) -> str:
            v = g.get(f"{side}_cpu_s_per_m_median")
            return "" if v is None else f"{v:.2f}"

        def share(side: str, g: dict[str, Any] = g) -> str:
            v = g.get(f"{side}_broker_cpu_share_median")
            return "" if v is None else f"{100 * v:.0f} %"

        out.append(
            f"| {name}, {label} | {cpu('java')} | {cpu('cy_batch')} | {cpu('cy_futures')} "
            f"| {cpu('import')} | {share('java')} | {share('cy_batch')} "
            f"| {_spread_text(g.get('cy_batch_vs_java_spread'))} "
            f"| {_spread_text(g.get('cy_futures_vs_java_spread'))} |"
        )
    return out


def _latency_rows(lat: dict[str, Any]) -> list[str]:
    """produce() to delivery at fixed rates, cykafka's futures beside ProducerPerformance's
    own percentiles, medians of the rounds."""
    groups = {
        "java_batch": "`batch.size=16384` both",
        "large_batch": "`batch.size=1000000` both",
        "defaults": "each at its defaults",
    }
    out = [
        "| latency, ms (median of rounds) | rate, msg/s | cykafka p50 | p99 | p99.9 "
        "| Java p50 | p99 | p99.9 | Java p99 / cykafka p99 | rounds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for group, label in groups.items():
        g = lat.get(group)
        if not g:
            continue
        for rate in lat.get("rates", []):
            cells = [
                f"{g[f'{side}@{rate}_{q}_median']:.1f}"
                for side in ("cykafka", "java")
                for q in ("p50_ms", "p99_ms", "p999_ms")
            ]
            ratio = g.get(f"p99_java_vs_cykafka@{rate}")
            out.append(
                f"| {label} | {rate:,} | {' | '.join(cells)} "
                f"| {_ratio(ratio, group != 'defaults')} "
                f"| {_spread_text(g.get(f'p99_java_vs_cykafka@{rate}_spread'))} |"
            )
    return out


def main(argv: list[str]) -> int:
    path = argv[1] if len(argv) > 1 else "bench/results/latest.json"
    with open(path) as f:
        res = json.load(f)
    if res.get("lines"):
        print(lines_table(res))
        print()
    print(targets_table(res))
    for extra in (import_table(res), anchors_table(res)):
        if extra:
            print()
            print(extra)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
