"""What a producer config actually guarantees on librdkafka, in plain words.

``explain(config, preset=...)`` resolves the configuration exactly as the Producer does
(:func:`cykafka.config.resolve`), then runs one rule per guarantee (``rules.py``):
acceptance, ordering, duplicates, loss, gaps and partitioning, plus what Java-name
translation changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional, Union

from .. import presets as _presets
from ..config import LIBRDKAFKA_DEFAULTS, ResolvedConfig, resolve
from .measured import MEASURED_INFLIGHT1_INVERSIONS, MEASURED_INFLIGHT1_REORDER
from .report import Guarantees
from .rules import NULL_KEYS, RULES, UNASKED, Draft, Facts, Unasked

__all__ = [
    "DEFAULTS",
    "MEASURED_INFLIGHT1_INVERSIONS",
    "MEASURED_INFLIGHT1_REORDER",
    "NULL_KEYS",
    "Guarantees",
    "explain",
]

DEFAULTS = LIBRDKAFKA_DEFAULTS

_SHOWN = (
    "request.required.acks",
    "enable.idempotence",
    "enable.gapless.guarantee",
    "max.in.flight.requests.per.connection",
    "message.send.max.retries",
    "message.timeout.ms",
    "queue.buffering.max.ms",
    "request.timeout.ms",
    "partitioner",
)


def _scalar_items(config: Mapping[str, Any]) -> dict[str, Any]:
    # Callbacks and nested dicts (error_cb, default.topic.config...) carry no guarantee
    # semantics and cannot be translated; leave them out of the analysis.
    return {
        str(k): v
        for k, v in config.items()
        if isinstance(v, (str, bytes, int, float)) and not callable(v)
    }


def explain(
    config: Union[Mapping[str, Any], ResolvedConfig],
    *,
    preset: _presets.PresetSpec = None,
    refusal: Union[Optional[str], Unasked] = UNASKED,
) -> Guarantees:
    """Explain ``config`` (Java or librdkafka names, or a :class:`ResolvedConfig`) with
    optional preset(s) applied.  ``refusal``: librdkafka's verdict on it, when the
    caller asked already (``rules.librdkafka_refusal``): librdkafka is not asked again.

    Raises ValueError for unknown/incompatible presets and untranslatable Java keys;
    everything else, including configs librdkafka would refuse, is reported as warnings.
    """
    r = config if isinstance(config, ResolvedConfig) else resolve(_scalar_items(config), preset)
    facts = Facts(r, refusal)
    draft = Draft()
    for rule in RULES:
        rule(facts, draft)
    shown = list(_SHOWN) + (
        ["transaction.timeout.ms", "transactional.id"] if r.transactional else []
    )
    settings = {}
    for name in shown:
        s = r.effective(name)
        settings[name] = f"{s.value} ({s.describe()})"
    return Guarantees(
        ordering=draft.ordering,
        duplicates_possible=draft.duplicates,
        loss_possible=bool(draft.loss),
        loss_conditions=draft.loss,
        gap_behaviour=draft.gap,
        partitioning=draft.partitioning,
        transactional=r.transactional,
        warnings=draft.warnings,
        silent_loss_possible=draft.silent,
        notes=draft.notes,
        settings=settings,
        presets=list(r.presets),
    )
