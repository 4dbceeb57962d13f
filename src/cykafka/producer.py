"""The Producer: librdkafka's producer with a future for every delivery."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any, Callable, Optional

from . import presets as _presets
from ._load import load_native

load_native()  # finds librdkafka before the import below needs it

from ._native import NativeProducer  # noqa: E402
from .config import CYKAFKA_KEYS, is_secret_key, mask_secrets, translate  # noqa: E402

__all__ = ["Producer"]

#: Java's producer default for max.block.ms.
DEFAULT_MAX_BLOCK_MS = 60000

# Callables a confluent-kafka style config may carry; librdkafka cannot take them.
_CALLBACK_KEYS = ("error_cb", "stats_cb")


class Producer(NativeProducer):
    """A Kafka producer.

    ``config`` takes librdkafka's property names (and the Java producer's, which
    are translated: see :func:`cykafka.translate`).  ``preset`` names one or more
    presets from :mod:`cykafka.presets` (e.g. ``"ordered"``) applied under the
    explicit config.  ``max.block.ms`` (default 60000) bounds how long
    :meth:`produce` waits for room when librdkafka's queue is full before
    raising :class:`BufferError`.

    ``on_error(exc)`` receives librdkafka's client-level errors (also logged to
    the ``cykafka`` logger); ``stats_cb(json_text)`` receives librdkafka's
    statistics every ``statistics.interval.ms``.  Both run on cykafka's event
    thread; exceptions they raise are logged.

    Every :meth:`produce` returns a :class:`DeliveryFuture`; deliveries are
    served by a background thread, so no ``poll()`` is needed.
    """

    def __init__(
        self,
        config: Optional[Mapping[str, Any]] = None,
        *,
        preset: _presets.PresetSpec = None,
        on_error: Optional[Callable[[Exception], Any]] = None,
        stats_cb: Optional[Callable[[str], Any]] = None,
    ) -> None:
        if config is not None and not isinstance(config, Mapping):
            raise TypeError(f"config must be a dict of properties, not {type(config).__name__}")
        given = dict(config or {})
        for key in _CALLBACK_KEYS:
            value = given.pop(key, None)
            if value is not None and not callable(value):
                raise TypeError(f"config property {key!r} must be callable")
            if key == "error_cb" and value is not None:
                on_error = on_error or value
            if key == "stats_cb" and value is not None:
                stats_cb = stats_cb or value
        for name, fn in (("on_error", on_error), ("stats_cb", stats_cb)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name} must be callable, not {type(fn).__name__}")
        self._preset = _presets.parse(preset) if preset else []
        self._given = given
        merged = _presets.apply(given, preset) if preset else given
        lib, self._notes = translate(merged)
        max_block_ms = float(lib.pop("max.block.ms", DEFAULT_MAX_BLOCK_MS))
        if max_block_ms < 0:
            raise ValueError(f"max.block.ms must be >= 0, not {max_block_ms:g}")
        for key in CYKAFKA_KEYS:
            lib.pop(key, None)
        self._config = lib
        secrets = tuple(str(v) for k, v in lib.items() if is_secret_key(k) and v)
        self._native_start(lib, max_block_ms / 1000.0, on_error, stats_cb, secrets)

    # -- context manager ----------------------------------------------------

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- introspection ------------------------------------------------------

    @property
    def config(self) -> dict[str, str]:
        """The librdkafka config in force (after presets and translation),
        secrets masked."""
        return mask_secrets(self._config)

    @property
    def guarantees(self) -> Any:
        """What this producer's config guarantees (see :func:`cykafka.explain`)."""
        from .explain import explain

        return explain(self._given, preset=self._preset or None)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self)} pending"
        servers = self._config.get("bootstrap.servers", "?") if hasattr(self, "_config") else "?"
        preset = f" preset={'+'.join(self._preset)}" if getattr(self, "_preset", None) else ""
        return f"<cykafka.Producer {self.name} {servers}{preset} {state}>"

    # -- transactions -------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, timeout: float = 60.0) -> Iterator[Producer]:
        """Run the block in a transaction: commit if it succeeds (which flushes),
        abort if it raises.  Requires a ``transactional.id`` (preset
        ``exactly_once``) and a prior :meth:`init_transactions`."""
        self.begin_transaction()
        try:
            yield self
        except BaseException:
            self.abort_transaction(timeout)
            raise
        self.commit_transaction(timeout)
