"""When nearly every record is both missing and extra, the options of the check most
likely differ from the import's (another --key-field, --value-field or --format): the
topic's first records are compared with the input's first rows read with each of the
other likely options, and the report says which one matches.

A sample, not a proof: the hint names the options to verify with; the verify run with
them is the proof.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from ..inputs import Fields, ReadOptions, Source

__all__ = ["NEARLY_ALL", "other_options"]

#: The share of the expected records missing and of the topic's records extra above
#: which the options, not the data, are the likely cause.
NEARLY_ALL = 0.9
#: Topic records sampled (the first of each partition, up to this many in all) and
#: input rows they are looked for in, per candidate.
_SAMPLE = 200
_INPUT_ROWS = 20_000

_Content = tuple[Optional[bytes], Optional[bytes], tuple[tuple[str, Optional[bytes]], ...]]


def _topic_sample(client: Mapping[str, Any], topic: str, timeout: float) -> list[_Content]:
    from ..cluster.committed import committed_messages, partitions_of

    parts = partitions_of(client, topic, timeout)
    each = max(1, _SAMPLE // max(len(parts), 1))
    out: list[_Content] = []
    for p in parts:
        for n, msg in enumerate(committed_messages(client, topic, [p], timeout=timeout)):
            if n >= each:
                break
            out.append((msg.key, msg.value, tuple(msg.headers or ())))
    return out


def _contents(
    sources: Sequence[tuple[Source, str]],
    fields: Fields,
    options: ReadOptions,
    static: tuple[tuple[str, bytes], ...],
) -> Iterator[_Content]:
    """What the import sends for the first rows of the input read this way."""
    from ..inputs.readers import READERS

    seen = 0
    for source, fmt in sources:
        for chunk in READERS[fmt].read(source, fields, options, lambda p: None):
            for i in range(len(chunk)):
                hs = tuple(
                    (h, v) for h, v in (chunk.headers[i] if chunk.headers is not None else ())
                )
                yield chunk.item(chunk.keys, i), chunk.item(chunk.values, i), hs + static
                seen += 1
                if seen >= _INPUT_ROWS:
                    return


def _field_names(sources: Sequence[tuple[Source, str]], options: ReadOptions) -> list[str]:
    """The fields of the first input's records (from its header, or its first record)."""
    import json

    from ..inputs import Fields

    source, fmt = sources[0]
    from ..inputs.readers import READERS

    if not READERS[fmt].has_fields:
        return []
    names = READERS[fmt].columns(source, options)
    if names:
        return list(names)
    for _, value, _ in _contents(sources[:1], Fields(), options, ()):
        try:
            record = json.loads(value or b"")
        except ValueError:
            return []
        return list(record) if isinstance(record, dict) else []
    return []


def _flag(name: str, value: Optional[str]) -> str:
    return f"{name} {value}" if value is not None else f"no {name}"


def _instead(name: str, new: Optional[str], old: Optional[str]) -> str:
    return f"{_flag(name, new)} (this check: {_flag(name, old)})"


def _candidates(
    sources: Sequence[tuple[Source, str]], fields: Fields, options: ReadOptions
) -> Iterator[tuple[str, Sequence[tuple[Source, str]], Fields]]:
    """(how it differs, the inputs with their formats, the fields) of each other likely
    way the import may have read the input."""
    from ..inputs import Fields
    from ..inputs.readers import FORMATS, READERS

    names = _field_names(sources, options)
    for key in [None, *names]:
        if key != fields.key and (key is None or key not in (fields.value, fields.partition)):
            yield (
                _instead("--key-field", key, fields.key),
                sources,
                dataclasses.replace(fields, key=key),
            )
    for value in [None, *names]:
        if value != fields.value and (value is None or value != fields.key):
            yield (
                _instead("--value-field", value, fields.value),
                sources,
                dataclasses.replace(fields, value=value),
            )
    fmt = sources[0][1]
    for other in FORMATS:
        if other == fmt or other == "parquet" or fmt == "parquet":
            continue  # Parquet is binary: no text format reads it, nor it them
        if READERS[other].has_fields:
            tries = [fields] if fields.any else [Fields()]
        else:
            tries = [Fields()]
        for f in tries:
            yield (
                f"--format {other} (this check: {fmt})"
                + ("" if f.any or not fields.any else " and no field options"),
                [(s, other) for s, _ in sources],
                f,
            )


def other_options(
    client: Mapping[str, Any],
    topic: str,
    sources: Sequence[tuple[Source, str]],
    fields: Fields,
    options: ReadOptions,
    static: tuple[tuple[str, bytes], ...],
    timeout: float,
) -> list[str]:
    """The hint lines of a report whose records nearly all are missing and extra."""
    from ..inputs import ImportInputError

    sample = _topic_sample(client, topic, timeout)
    if not sample:
        return []
    scores: dict[str, int] = {}
    for how, srcs, f in _candidates(sources, fields, options):
        try:
            rows = set(_contents(srcs, f, options, static))
        except (ImportInputError, ValueError, UnicodeDecodeError):
            continue  # this way of reading the input fails: not the import's
        scores[how] = sum(1 for rec in sample if rec in rows)
    n = len(sample)
    top = max(scores.values(), default=0)
    if top * 2 >= n:
        # every option that matches as well is named: the sample cannot tell them apart
        ways = [how for how, hits in scores.items() if hits == top]
        return [
            "nearly every record is missing and extra: the options differ from the "
            f"import's. With {' or with '.join(ways)}, {top:,} of the topic's first "
            f"{n:,} records match the input: verify with "
            + ("that option" if len(ways) == 1 else "the option the import used")
        ]
    return [
        "nearly every record is missing and extra: were the input or the topic different, "
        "or the import's options (--key-field, --value-field, --format, -K, -H)? None of "
        "the other likely options makes the topic's first records match the input"
    ]
