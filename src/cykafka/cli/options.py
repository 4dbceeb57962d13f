"""What several subcommands share, declared once: the usage error, the producer
config options (-X, -F/--config-file, --preset, -b) and how they become a config."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

if TYPE_CHECKING:
    from ..config import ResolvedConfig
    from ..presets import PresetSpec

__all__ = [
    "BOOTSTRAP_ENV",
    "UsageError",
    "add_bootstrap",
    "add_connect_timeout",
    "add_overrides",
    "add_preset",
    "check_config",
    "config_from_args",
    "config_refused",
    "connect_timeout_from",
    "load_config_file",
    "parse_assignments",
]

#: Environment variable naming the brokers when --bootstrap-servers is not given.
BOOTSTRAP_ENV = "CYKAFKA_BOOTSTRAP_SERVERS"


class UsageError(Exception):
    """Bad input from the user: printed without a traceback, exit code 2."""


def parse_assignments(lines: list[str], origin: str = "-X") -> dict[str, str]:
    """``key=value`` lines (librdkafka .properties style; ``#``/``!`` comments, blanks).
    A malformed line is named by its position, never echoed: it may hold a secret."""
    out: dict[str, str] = {}
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            where = f"{origin}:{lineno}" if origin != "-X" else f"-X (argument {lineno})"
            raise UsageError(f"{where}: expected KEY=VALUE, got an argument without a key and '='")
        out[key.strip()] = value.strip()
    return out


def load_config_file(path: str) -> dict[str, Any]:
    """A config file: JSON object if it ends with .json, else key=value lines."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    if path.endswith(".json"):
        import json

        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise UsageError(f"{path}: invalid JSON at line {e.lineno}: {e.msg}") from None
        if not isinstance(data, Mapping):
            raise UsageError(f"{path}: expected a JSON object of properties")
        return dict(data)
    return dict(parse_assignments(text.splitlines(), origin=path))


def check_config(
    config: Union[Mapping[str, Any], ResolvedConfig], preset: PresetSpec = None
) -> None:
    """librdkafka's own verdict on every property (unknown keys, bad values), given
    before anything starts: a :class:`UsageError` naming the property, with the values
    of secret-like keys redacted.  Builds (and at once closes) a producer that is
    never connected: librdkafka checks properties only when a client is made.
    ``config``: properties with ``preset``, or a front door's resolution."""
    import warnings

    from .._native import KafkaConfigError
    from ..config import ConfigWarning, ResolvedConfig, redact
    from ..producer import Producer

    probe: Union[dict[str, Any], ResolvedConfig]
    shown: Mapping[str, Any]  # what an error's secrets are masked against
    if isinstance(config, ResolvedConfig):
        probe = config.without("bootstrap.servers").with_default("log_level", "0", "cykafka")
        preset, shown = None, config.librdkafka()
    else:
        probe = {k: v for k, v in config.items() if k != "bootstrap.servers"}
        probe.setdefault("log_level", 0)  # no "no bootstrap.servers" warning
        shown = config
    try:
        with warnings.catch_warnings():
            # The producer the command makes warns of them; the probe need not repeat it.
            warnings.simplefilter("ignore", ConfigWarning)
            Producer(probe, preset=preset).close(0)
    except KafkaConfigError as e:
        raise config_refused(e.message, shown) from None
    except (ValueError, TypeError) as e:
        raise UsageError(redact(str(e), shown)) from None


def config_refused(message: str, shown: Mapping[str, Any]) -> UsageError:
    """librdkafka's refusal of a configuration, as the one line a user reads, with the
    secret values of ``shown`` masked."""
    from ..config import redact, suggest_property

    # "config property 'KEY': reason": the key name is shown as is (redact() would
    # take "secret': No" for an assignment), the reason with secret values masked.
    head, sep, reason = message.partition("': ")
    text = head + sep + redact(reason, shown) if sep else redact(message, shown)
    hint = ""
    if sep and reason.startswith("No such configuration property"):
        hint = suggest_property(head.partition("'")[2])
    return UsageError(f"{text} (from -X or the config file){hint}")


def add_overrides(p: argparse.ArgumentParser, help: str = "producer property (repeatable)") -> None:
    p.add_argument(
        "-X", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help=help
    )


def add_preset(p: argparse.ArgumentParser, default: Optional[str], help: str) -> None:
    p.add_argument("--preset", default=default, metavar="P", help=help)


def add_bootstrap(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("-b", "--bootstrap-servers", metavar="HOST:PORT", help=help)


#: --connect-timeout's default as --help shows it, written out so that ``cykafka --help``
#: does not import the cluster modules (a test checks it against
#: cykafka.cluster.reach.CONNECT_TIMEOUT_S).
HELP_CONNECT_TIMEOUT = "6"


def add_connect_timeout(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--connect-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="how long to wait for the cluster's first answer before giving up "
        f"(default {HELP_CONNECT_TIMEOUT})",
    )


def connect_timeout_from(args: argparse.Namespace) -> float:
    """--connect-timeout, else cykafka's default (cykafka.cluster.reach)."""
    from ..cluster.reach import CONNECT_TIMEOUT_S

    given: Optional[float] = args.connect_timeout
    return CONNECT_TIMEOUT_S if given is None else given


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, e.g. 30, not {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds > 0, not {text!r}")
    return value


def config_from_args(args: argparse.Namespace, file: Optional[str] = None) -> dict[str, Any]:
    """The config file (if any) with the -X overrides on top."""
    config: dict[str, Any] = load_config_file(file) if file else {}
    config.update(parse_assignments(args.overrides))
    return config


def bootstrap_from(args: argparse.Namespace, config: Mapping[str, Any]) -> Optional[str]:
    """-b, else the config's bootstrap.servers, else $CYKAFKA_BOOTSTRAP_SERVERS."""
    return (
        getattr(args, "bootstrap_servers", None)
        or config.get("bootstrap.servers")
        or os.environ.get(BOOTSTRAP_ENV)
        or None
    )
