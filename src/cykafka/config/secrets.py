"""What is secret in a producer config, and how it is kept out of output (the only copy).

The extension (``ext/config.pxi``) receives the secret values the Python side found
here (``secret_values``) and masks them in librdkafka's own error strings, so the rule
"which key is secret" lives in this module alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import overload

__all__ = [
    "MASK",
    "is_secret_key",
    "jaas_module",
    "jaas_options",
    "mask_secrets",
    "redact",
    "secret_values",
    "shown",
]


_SECRET_KEYS: frozenset[str] = frozenset(
    {
        "sasl.password",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.key.pem",
        "ssl_key",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.client.credentials.client.secret",
        "sasl.oauthbearer.assertion.private.key.passphrase",
        "sasl.oauthbearer.assertion.private.key.pem",
        # Free-form strings that routinely embed credentials.
        "sasl.oauthbearer.config",
        "sasl.jaas.config",
        "ssl.keystore.key",
    }
)
_SECRET_WORDS = re.compile(r"password|secret|passphrase|jaas", re.IGNORECASE)
MASK = "***"


def is_secret_key(key: str) -> bool:
    """True for keys whose value must never be shown (logs, reports, exceptions)."""
    return key.lower() in _SECRET_KEYS or _SECRET_WORDS.search(key) is not None


def secret_values(config: Mapping[str, object]) -> list[str]:
    """Every string that would leak a secret of ``config``, longest first."""
    found: set[str] = set()
    for key, value in config.items():
        if isinstance(value, Mapping):
            found.update(secret_values(value))
            continue
        if not is_secret_key(str(key)) or value is None or callable(value):
            continue
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        if not text:
            continue
        found.add(text)
        # A PEM key or JAAS line may be logged reformatted: also hide its pieces.
        found.update(line.strip() for line in text.splitlines() if len(line.strip()) >= 8)
        found.update(v for _, v in jaas_options(text) if v)
    return sorted(found, key=len, reverse=True)


# key=value / "key": "value" fragments naming a secret-like key, for secrets that are not
# in the config we were given (e.g. an error quoting another client's settings).
_SECRET_ASSIGNMENT = re.compile(
    r"""(?P<key>[\w.\-]*(?:password|secret|passphrase)[\w.\-]*)(?P<sep>["']?\s*[=:]\s*)"""
    r"""(?P<value>"[^"]*"|'[^']*'|[^\s,;}\]]+)""",
    re.IGNORECASE,
)


def redact(text: str, config: Mapping[str, object]) -> str:
    """Remove the secret values of ``config`` (and ``secret-key=value`` pairs) from text.

    Used on log lines and exception messages before they reach the user. Values are
    replaced in a single regex pass, longest first, so one secret that is a prefix of
    another cannot leave the tail of the longer one visible.
    """
    secrets = secret_values(config)
    if secrets:
        pattern = re.compile("|".join(re.escape(s) for s in secrets))
        text = pattern.sub(MASK, text)
    return _SECRET_ASSIGNMENT.sub(lambda m: f"{m['key']}{m['sep']}{MASK}", text)


@overload
def mask_secrets(config: Mapping[str, str]) -> dict[str, str]: ...
@overload
def mask_secrets(config: Mapping[str, object]) -> dict[str, object]: ...
def mask_secrets(config: Mapping[str, object]) -> Mapping[str, object]:
    """A copy of ``config`` safe to print: secret-like keys get ``"***"``.

    Secret values that also appear inside other string values (say a password pasted
    into ``sasl.oauthbearer.extensions``) are blanked there too; nested mappings are
    masked recursively; non-string values (callbacks, numbers) are kept.
    """
    secrets = secret_values(config)
    pattern = re.compile("|".join(re.escape(s) for s in secrets)) if secrets else None
    out: dict[str, object] = {}
    for key, value in config.items():
        if is_secret_key(str(key)):
            out[key] = MASK
        elif isinstance(value, Mapping):
            out[key] = mask_secrets(value)
        elif isinstance(value, str) and pattern is not None:
            out[key] = pattern.sub(MASK, value)
        else:
            out[key] = value
    return out


def shown(key: str, value: object) -> str:
    """A value for an error message, masked if the key is secret-like."""
    return MASK if is_secret_key(key) else repr(value)


_JAAS_MODULE = re.compile(r"^\s*(?P<module>[\w.$]+)\s+(?:required|requisite|sufficient|optional)\b")
_JAAS_OPTION = re.compile(r"""(?P<k>[\w.]+)\s*=\s*(?P<v>"(?:[^"\\]|\\.)*"|[^\s;]+)""")


def jaas_module(text: str) -> str:
    """The login module class named at the start of a JAAS line ("" if none)."""
    head = _JAAS_MODULE.match(text)
    return head["module"] if head else ""


def jaas_options(text: str) -> list[tuple[str, str]]:
    """``key=value`` options of a JAAS line, quotes removed."""
    head = _JAAS_MODULE.match(text)
    if head is None:
        return []
    opts = []
    for m in _JAAS_OPTION.finditer(text, head.end()):
        v = m["v"]
        if len(v) >= 2 and v[0] == v[-1] == '"':
            v = re.sub(r"\\(.)", r"\1", v[1:-1])
        opts.append((m["k"], v))
    return opts
