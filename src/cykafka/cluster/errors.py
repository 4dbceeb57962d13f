"""confluent-kafka's errors as cykafka's.

The admin and consumer calls below the front doors go through confluent-kafka's clients,
which fail with ``KafkaException`` (carrying a ``KafkaError``) or hand a consumer a
``KafkaError``.  :func:`from_confluent` turns either into the exception cykafka's producer
raises for the same librdkafka code (:func:`cykafka._native.error_from_code`, the one
table of classes), and :func:`translated` makes a function (or generator) raise that
wherever confluent-kafka's would escape it, so a caller catches one family,
:class:`cykafka.KafkaError`.  The compiled extension is loaded only once an error is
translated.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union, cast

if TYPE_CHECKING:
    import confluent_kafka

    from .._native import KafkaError

__all__ = ["confluent_errors", "error_code", "from_code", "from_confluent", "translated"]

F = TypeVar("F", bound=Callable[..., Any])

#: librdkafka's RD_KAFKA_RESP_ERR_UNKNOWN: a KafkaException that carries no KafkaError.
_UNKNOWN = -1


def from_confluent(error: Union[BaseException, confluent_kafka.KafkaError]) -> KafkaError:
    """cykafka's exception for a confluent-kafka ``KafkaException`` or ``KafkaError``:
    its code, text, and whether it is retriable, fatal or needs the transaction
    aborted."""
    from confluent_kafka import KafkaError as ConfluentError

    from .._native import error_from_code

    err = error.args[0] if isinstance(error, BaseException) and error.args else error
    if isinstance(err, ConfluentError):
        return error_from_code(
            err.code(),
            err.str(),
            # confluent-kafka says False for a bare code (not known): cykafka's table
            # decides then, as for a delivery report's code.
            retriable=err.retriable() or None,
            fatal=err.fatal(),
            txn_requires_abort=err.txn_requires_abort(),
        )
    return error_from_code(_UNKNOWN, str(error))


def from_code(code: int, context: str) -> KafkaError:
    """cykafka's exception for an error code in a Kafka protocol response that cykafka
    read itself (:mod:`.wire`): Kafka's codes are librdkafka's positive ones."""
    from .._native import error_from_code

    return error_from_code(code, context)


def error_code(exc: BaseException) -> Optional[int]:
    """librdkafka's code of a cykafka or confluent-kafka error; None for any other
    exception."""
    native = sys.modules.get("cykafka._native")  # no cykafka error without it
    if native is not None and isinstance(exc, native.KafkaError):
        return int(exc.code)
    from confluent_kafka import KafkaError as ConfluentError
    from confluent_kafka import KafkaException

    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], ConfluentError):
        return int(exc.args[0].code())
    return None


@contextmanager
def confluent_errors() -> Iterator[None]:
    """A block in which a confluent-kafka ``KafkaException`` is raised as cykafka's
    exception (:func:`from_confluent`)."""
    from confluent_kafka import KafkaException

    try:
        yield
    except KafkaException as exc:
        raise from_confluent(exc) from None


def translated(fn: F) -> F:
    """``fn`` raising cykafka's exception where confluent-kafka's would escape it; for
    a generator function, anywhere in its iteration."""
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def generator(*args: Any, **kwargs: Any) -> Any:
            with confluent_errors():
                return (yield from fn(*args, **kwargs))

        return cast(F, generator)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with confluent_errors():
            return fn(*args, **kwargs)

    return cast(F, call)
