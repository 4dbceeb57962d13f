"""The answer ``explain`` gives: a Guarantees report, printable and JSON-able."""

from __future__ import annotations

import textwrap
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["REFUSED", "Guarantees"]

#: Prefix of every warning that says librdkafka will not construct the producer.
REFUSED = "librdkafka will refuse to create this producer: "


@dataclass(frozen=True)
class Guarantees:
    """The delivery guarantees of one effective producer config."""

    ordering: str  # "none" | "per-partition"
    duplicates_possible: bool
    #: A produced message can end up not written (any cause, see loss_conditions).
    loss_possible: bool
    #: Each way that can happen, saying whether the application is told.
    loss_conditions: list[str]
    gap_behaviour: str  # "fatal error" | "skip (...)" | "n/a"
    partitioning: str
    transactional: bool
    warnings: list[str]
    #: A message reported as delivered may still be missing (acks=0 / acks=1).
    silent_loss_possible: bool = False
    #: Informational sentences (why ordering is what it is, broker-side caveats...).
    notes: list[str] = field(default_factory=list)
    #: Effective values of the properties considered, with where each came from.
    settings: dict[str, str] = field(default_factory=dict)
    presets: list[str] = field(default_factory=list)

    @property
    def refused(self) -> bool:
        """librdkafka would fail to construct a producer from this config."""
        return any(w.startswith(REFUSED) for w in self.warnings)

    def summary(self) -> str:
        """One sentence for the end of ``cykafka import`` and similar."""
        if self.refused:
            first = next(w for w in self.warnings if w.startswith(REFUSED))
            return first[0].upper() + first[1:].rstrip(".") + "."
        order = (
            "per-partition order" if self.ordering == "per-partition" else "no ordering guarantee"
        )
        dups = "duplicates possible" if self.duplicates_possible else "no duplicates from retries"
        if self.silent_loss_possible:
            loss = "messages can be lost silently"
        elif self.loss_possible:
            loss = "failed messages are reported"
        else:
            loss = "no loss"
        parts = [order, dups, loss, f"partitioning {self.partitioning}"]
        if self.transactional:
            parts.insert(0, "transactional")
        text = "; ".join(parts)
        if self.warnings:
            n = len(self.warnings)
            text += f"; {n} warning{'s' if n != 1 else ''}"
        return text[0].upper() + text[1:] + "."

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["summary"] = self.summary()
        d["refused"] = self.refused
        return d

    def __str__(self) -> str:
        def wrap(text: str, first: str, rest: str) -> str:
            return textwrap.fill(text, 100, initial_indent=first, subsequent_indent=rest)

        yes = {True: "yes", False: "no"}
        title = "Delivery guarantees (librdkafka 2.16"
        title += f", presets: {'+'.join(self.presets)})" if self.presets else ")"
        lines = [
            title,
            f"  ordering:            {self.ordering}",
            f"  duplicates possible: {yes[self.duplicates_possible]}",
            f"  loss possible:       {yes[self.loss_possible]}"
            + (" (including silently)" if self.silent_loss_possible else ""),
        ]
        lines += [wrap(c, "    - ", "      ") for c in self.loss_conditions]
        lines += [
            f"  gap behaviour:       {self.gap_behaviour}",
            f"  partitioning:        {self.partitioning}",
            f"  transactional:       {yes[self.transactional]}",
        ]
        if self.settings:
            lines.append("Settings considered:")
            lines += [f"  {k} = {v}" for k, v in self.settings.items()]
        if self.warnings:
            lines.append("Warnings:")
            lines += [wrap(w, "  ! ", "    ") for w in self.warnings]
        if self.notes:
            lines.append("Notes:")
            lines += [wrap(n, "  - ", "    ") for n in self.notes]
        lines.append(wrap(self.summary(), "Summary: ", "  "))
        return "\n".join(lines)
