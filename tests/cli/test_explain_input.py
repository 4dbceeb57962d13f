"""``cykafka explain`` and bad input: an unknown key, a value librdkafka does not take and a
combination it refuses are refused the same way (exit 2, one line, no guarantees block),
with a did-you-mean from librdkafka's property list and the Java names."""

from __future__ import annotations

import pytest

from cykafka.cli import main


@pytest.mark.parametrize(
    ("args", "culprit"),
    [
        (["-X", "linger.ms=abc"], "'linger.ms': Invalid value"),
        (["-X", "acks=maybe"], "'acks': Invalid value"),
        (["-X", "compression.type=zip"], "'compression.type': Invalid value"),
        (["-X", "lingr.ms=5"], "'lingr.ms': No such configuration property"),
        # rd_kafka_new's cross-check, not a single property's
        (["-X", "enable.idempotence=true", "-X", "acks=0"], "`acks` must be set to `all`"),
    ],
)
def test_every_config_librdkafka_refuses_is_exit_2_without_a_report(
    args: list[str], culprit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", *args]) == 2
    out, err = capsys.readouterr()
    assert out == "", "a refused config got a guarantees report"
    (line,) = err.splitlines()
    assert line.startswith("cykafka explain: error: ") and culprit in line, line
    # the same refusal with --json: nothing on stdout either
    assert main(["explain", "--json", *args]) == 2
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("lingr.ms", "linger.ms"),
        ("enable.idempotance", "enable.idempotence"),
        ("Linger.MS", "linger.ms"),
        ("max.in.flight.request.per.connection", "max.in.flight.requests.per.connection"),
        ("delivery.timeout", "delivery.timeout.ms"),
        ("max.request.sise", "max.request.size"),  # a Java name the resolver translates
    ],
)
def test_a_misspelled_key_gets_a_did_you_mean(
    typo: str, meant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", "-X", f"{typo}=1"]) == 2
    err = capsys.readouterr().err
    assert f"did you mean {meant!r}" in err, err


def test_a_key_nothing_resembles_gets_no_guess(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "-X", "my.app.secret=hunter22"]) == 2
    err = capsys.readouterr().err
    assert "No such configuration property" in err and "did you mean" not in err
    assert "hunter22" not in err


def test_the_import_gives_the_same_did_you_mean(
    tmp_path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refusal is the one every front door's config check gives (no broker started)."""
    monkeypatch.delenv("CYKAFKA_BOOTSTRAP_SERVERS", raising=False)
    f = tmp_path / "a.txt"
    f.write_text("a\n")
    assert main(["import", str(f), "-t", "x", "--no-progress", "-X", "lingr.ms=5"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.endswith("(did you mean 'linger.ms'?)"), line


def test_a_config_librdkafka_builds_still_gets_its_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explain", "-X", "linger.ms=20", "-X", "acks=1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Delivery guarantees") and "acks=1" in out
