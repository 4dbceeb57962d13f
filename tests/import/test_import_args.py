"""`cykafka import`'s arguments, checked before any broker is reached: --version, and
-X errors that never echo a secret value."""

from __future__ import annotations

import pytest

from cykafka.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith("cykafka ")


@pytest.mark.parametrize("arg", ["sasl.password:hunter2secret", "=hunter2secret"])
def test_x_errors_never_echo_the_value(tmp_path, arg, capsys):
    f = tmp_path / "a.txt"
    f.write_text("x\n")
    assert main(["import", "-b", "127.0.0.1:1", "-t", "t", "-X", arg, str(f)]) == 2
    captured = capsys.readouterr()
    assert "hunter2secret" not in captured.err + captured.out
    assert "-X" in captured.err
