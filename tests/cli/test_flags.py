"""Every option of every command is honoured or refused: the audit.

:data:`AUDIT` names, for each option of each subcommand (every mode: ``broker`` with
and without ``--kafka``), either the arguments that refuse it with a reason (run
here, nothing started) or the tests that show it changes what the command does.  An
option added without an entry fails :func:`test_every_option_is_audited`."""

from __future__ import annotations

import argparse
import re
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from cykafka.cli import build_parser, main
from support.cli import child_env

TESTS = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Refused:
    """``cykafka ARGV`` exits 2 saying ``reason`` (``{f}``: a file of rows)."""

    argv: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Honoured:
    """Tests (``path::name`` under tests/) that show the option changes behaviour."""

    tests: tuple[str, ...]


IMP = "import/test_importer.py::"
INP = "import/test_import_inputs.py::"
CLI = "import/test_import_cli.py::"
REG = "import/test_import_schema_registry.py::"
RES = "import/test_resume.py::"
VER = "verify/test_verify.py::"

#: Input options shared by import and verify: one parser (cli/input_options.py), one
#: reader; verify's own tests use a few of them, the rest read as the import reads.
SHARED = {
    "--allow-empty": Honoured(("import/test_empty_inputs.py::test_allow_empty_reads_zero_rows_and_says_so",
                               "import/test_empty_inputs.py::test_verify_allow_empty_matches_an_empty_topic")),
    "--format": Honoured((CLI + "test_dry_run_shows_records_and_sends_nothing",
                          INP + "test_stdin_is_lines_unless_format_says_otherwise")),
    "--key-field": Honoured((IMP + "test_csv_key_field_and_record_json",)),
    "--value-field": Honoured((IMP + "test_jsonl_fields_and_bad_line",)),
    "--partition-field": Honoured((IMP + "test_parquet_partition_and_header_fields",
                                   VER + "test_rows_whose_partition_field_is_null_are_where_the_partitioner_put_them")),
    "--timestamp-field": Honoured((CLI + "test_key_delimiter_headers_partition_timestamp",)),
    "--timezone": Honoured((INP + "test_naive_timestamps_follow_the_one_rule",)),
    "--header-fields": Honoured((IMP + "test_parquet_partition_and_header_fields",)),
    "--nan": Honoured(("import/test_import_fidelity.py::test_nan_null_and_nan_string_send_every_row_as_asked",)),
    "--delimiter": Honoured((INP + "test_semicolon_csv_with_options",)),
    "--quote-char": Honoured((INP + "test_semicolon_csv_with_options",)),
    "--encoding": Honoured((INP + "test_latin1_no_header_column_names",)),
    "--no-header": Honoured((INP + "test_latin1_no_header_column_names",)),
    "--column-names": Honoured((INP + "test_latin1_no_header_column_names",)),
    "--null-value": Honoured((INP + "test_semicolon_csv_with_options",)),
    "--csv-types": Honoured(("import/test_import_fidelity.py::test_csv_types_inferred_or_all_text",)),
    "-K": Honoured((CLI + "test_key_delimiter_headers_partition_timestamp",)),
    "-H": Honoured((CLI + "test_key_delimiter_headers_partition_timestamp",)),
    "-p": Honoured((CLI + "test_key_delimiter_headers_partition_timestamp",
                    CLI + "test_partition_that_does_not_exist_is_refused_before_reading")),
    "-X": Honoured(("cli/test_cli.py::test_bad_x_property_is_one_usage_line",)),
    "--topic": Honoured((IMP + "test_embedded_broker_sample",)),
    "--bootstrap-servers": Honoured(("cli/test_unreachable.py::test_every_command_says_an_unreachable_cluster_in_one_line",)),
    "--connect-timeout": Honoured(("cli/test_unreachable.py::test_the_connect_timeout_is_settable",)),
}  # fmt: skip

REGISTRY = {
    "--value-format": Honoured((REG + "test_jsonl_records_and_key_field_as_registry_avro",)),
    "--key-format": Honoured((REG + "test_jsonl_records_and_key_field_as_registry_avro",)),
    "--schema-registry": Honoured((REG + "test_json_schema_import",)),
    "--value-schema": Honoured((REG + "test_parquet_as_registry_avro_bad_row_dead_lettered",)),
    "--key-schema": Honoured((REG + "test_parquet_as_registry_avro_bad_row_dead_lettered",)),
}  # fmt: skip

LAUNCH = "registry/test_launcher.py::"

AUDIT: dict[str, dict[str, object]] = {
    "import": {
        **SHARED,
        **REGISTRY,
        "files": Honoured((INP + "test_quoted_glob_and_part_directory",)),
        "--preset": Honoured(("import/test_import_args.py",)),
        "--skip-rows": Honoured((IMP + "test_interrupted_summary_says_how_to_finish_without_duplicates",
                                 "import/test_import_interrupt.py::test_the_printed_command_finishes_a_stopped_plain_import",
                                 "cli/test_embedded_advice.py::test_skip_rows_into_the_embedded_broker_is_refused")),
        "--rate": Honoured(("import/test_import_interrupt.py::test_sigterm_and_sighup_stop_a_plain_import_like_ctrl_c",)),
        "--config-file": Honoured(("cli/test_flags.py::test_import_reads_its_config_file",)),
        "--dead-letter": Honoured((IMP + "test_delivery_failures_go_to_dead_letter",)),
        "--dry-run": Honoured((CLI + "test_dry_run_shows_records_and_sends_nothing",)),
        "--inspect": Honoured((IMP + "test_inspect_without_a_terminal_logs_lines",)),
        "--partitions": Honoured((CLI + "test_missing_topic_is_an_error_unless_partitions",)),
        "--keep-broker": Honoured((IMP + "test_keep_broker_serves_until_interrupted",
                                   "cli/test_embedded_advice.py::test_the_embedded_brokers_closing_advice_runs_as_printed")),
        "--sample": Honoured((IMP + "test_embedded_broker_sample",)),
        "--verbose": Honoured(("cli/test_client_log.py::test_a_broker_away_is_not_streamed_but_verbose_shows_it",)),
        "--no-progress": Honoured((IMP + "test_inspect_without_a_terminal_logs_lines",)),
        "--timings": Honoured((CLI + "test_timings_say_where_the_wall_time_went",)),
        "--exactly-once": Honoured(("import/test_import_interrupt.py::test_exactly_once_stop_adds_up_and_the_same_command_finishes",)),
        "--transactional-id": Honoured((RES + "test_transactional_id_and_progress_topic_can_be_named",)),
        "--commit-every": Honoured(("import/test_import_interrupt.py::test_exactly_once_stop_adds_up_and_the_same_command_finishes",)),
        "--progress-topic": Honoured((RES + "test_transactional_id_and_progress_topic_can_be_named",)),
        "--resume": Honoured(("cli/test_flags.py::test_resume_no_is_restart",)),
        "--restart": Honoured((RES + "test_changed_input_is_refused_then_restart",)),
    },
    "verify": {
        **SHARED,
        **{
            flag: Refused(("verify", "-b", "127.0.0.1:1", "-t", "t", "{f}", flag, value),
                          "cannot be verified yet")
            for flag, value in (("--value-format", "avro"), ("--key-format", "avro"),
                                ("--schema-registry", "http://127.0.0.1:1"),
                                ("--value-schema", "s.avsc"), ("--key-schema", "s.avsc"))
        },
        "files": Honoured((VER + "test_rows_whose_partition_field_is_null_are_where_the_partitioner_put_them",)),
        "--skip-rows": Refused(("verify", "-b", "127.0.0.1:1", "-t", "t", "{f}", "--skip-rows", "2"),
                               "verify compares the topic with the whole input"),
        "--config-file": Honoured(("cli/test_flags.py::test_verify_reads_its_config_file",)),
        "--tmp-dir": Honoured(("cli/test_flags.py::test_verify_tmp_dir_is_where_it_spills",)),
    },
    "broker": {
        "--port": Honoured((IMP + "test_broker_subcommand_runs_until_sigterm",
                            "cli/test_flags.py::test_broker_kafka_listens_on_the_port_given")),
        "--host": Honoured(("cli/test_flags.py::test_broker_kafka_listens_on_the_port_given",)),
        "--topic": Honoured(("launchers/test_kafka_cluster.py::test_cykafka_broker_kafka_serves_until_sigterm",)),
        "--partitions": Refused(("broker", "--partitions", "0"), "--partitions must be >= 1"),
        "--storage": Refused(("broker", "--kafka", "--storage", "memory://x/"),
                             "--storage applies to the embedded broker"),
        "--log-file": Refused(("broker", "--kafka", "--log-file", "x.log"),
                              "--log-file applies to the embedded broker"),
        "--kafka": Honoured(("launchers/test_kafka_cluster.py::test_cykafka_broker_kafka_serves_until_sigterm",)),
        "--nodes": Refused(("broker", "--nodes", "3"), "--nodes and --data-dir go with --kafka"),
        "--data-dir": Refused(("broker", "--data-dir", "d"), "--nodes and --data-dir go with --kafka"),
    },
    "top": {
        "-m": Refused(("top", "-m", "x", "script.py"), "give exactly one of SCRIPT or -m MODULE"),
        "script": Refused(("top",), "give exactly one of SCRIPT or -m MODULE"),
        "args": Honoured(("inspector/test_inspector.py::test_cykafka_top_runs_a_script_with_the_view",)),
        "--interval": Refused(("top", "--interval", "0", "s.py"), "--interval must be > 0"),
        "--log-interval": Honoured(("inspector/test_inspector.py::test_cykafka_top_runs_a_script_with_the_view",)),
        "--stats-interval-ms": Refused(("top", "--stats-interval-ms", "-1", "s.py"),
                                       "--stats-interval-ms >= 0"),
    },
    "explain": {
        "config_file": Honoured(("cli/test_cli.py::test_explain_properties_file",)),
        "-X": Honoured(("cli/test_cli.py::test_explain_json_file_x_and_preset",)),
        "--preset": Honoured(("cli/test_cli.py::test_explain_preset_combo",)),
        "--json": Honoured(("cli/test_cli.py::test_explain_json_file_x_and_preset",)),
    },
    "registry": {
        "--port": Honoured((LAUNCH + "test_cli_serves_until_ctrl_c_and_a_killed_parent_takes_it_along",
                            LAUNCH + "test_a_taken_port_is_an_error_naming_the_log")),
        "--compatibility": Honoured((LAUNCH + "test_a_bad_compatibility_names_the_levels",
                                     LAUNCH + "test_the_session_registry_listens_on_loopback_only_with_backward")),
        "--log-file": Honoured((LAUNCH + "test_a_taken_port_is_an_error_naming_the_log",)),
    },
    "presets": {
        "name": Refused(("presets", "nope"), "valid presets"),
    },
}  # fmt: skip


def _options() -> list[tuple[str, str]]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = []
    for name, p in sub.choices.items():
        for a in p._actions:
            if isinstance(a, argparse._HelpAction):
                continue
            flags = [s for s in a.option_strings if s.startswith("--")] or a.option_strings
            out.append((name, flags[0] if flags else a.dest))
    return out


def test_every_option_is_audited() -> None:
    missing = [f"{c} {o}" for c, o in _options() if o not in AUDIT.get(c, {})]
    assert missing == [], f"options with no test that they are honoured or refused: {missing}"


@pytest.mark.parametrize(
    "proof",
    sorted({t for c in AUDIT.values() for e in c.values() if isinstance(e, Honoured) for t in e.tests}),
)  # fmt: skip
def test_each_named_proof_exists(proof: str) -> None:
    path, _, name = proof.partition("::")
    text = (TESTS / path).read_text()
    assert not name or re.search(rf"\bdef {name}\(", text), proof


REFUSALS = [
    (c, o, e) for c, opts in AUDIT.items() for o, e in opts.items() if isinstance(e, Refused)
]


@pytest.mark.parametrize(("command", "option", "case"), REFUSALS, ids=[f"{c} {o}" for c, o, _ in REFUSALS])  # fmt: skip
def test_refused_with_a_reason(
    command: str, option: str, case: Refused, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "rows.csv"
    f.write_text("id\n1\n2\n3\n")
    argv = [str(f) if a == "{f}" else a for a in case.argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert case.reason in err, err


def test_resume_no_is_restart(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--resume=no is --restart: without --exactly-once refused as it is; with it, the
    dry run (nothing started) says the import begins at the first row."""
    f = tmp_path / "rows.csv"
    f.write_text("id\n1\n")
    assert main(["import", "-t", "t", "--resume", "no", str(f)]) == 2
    assert "--resume=no needs --exactly-once" in capsys.readouterr().err
    from cykafka.cli.exactly_once import exactly_once_from_args

    parser = build_parser()
    args = parser.parse_args(["import", "-t", "t", "--exactly-once", "--resume", "no", str(f)])
    eo = exactly_once_from_args(args, {})
    assert eo is not None and eo.restart
    args = parser.parse_args(["import", "-t", "t", "--exactly-once", str(f)])
    eo = exactly_once_from_args(args, {})
    assert eo is not None and not eo.restart


def _bad_properties(tmp_path: Path) -> str:
    cfg = tmp_path / "client.properties"
    cfg.write_text("# a misspelled key\nlinger.mss=5\n")
    return str(cfg)


def test_import_reads_its_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "rows.csv"
    f.write_text("id\n1\n")
    assert main(["import", "-t", "t", "-F", _bad_properties(tmp_path), "--dry-run", str(f)]) == 2
    assert "linger.mss" in capsys.readouterr().err


def test_verify_reads_its_config_file(tmp_path: Path) -> None:
    """The file's properties reach verify's client: a bootstrap.servers given there is
    the cluster verify tries (here one that refuses every connection)."""
    from support.cli import run_cykafka

    f = tmp_path / "rows.csv"
    f.write_text("id\n1\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        addr = f"127.0.0.1:{s.getsockname()[1]}"
        cfg = tmp_path / "client.properties"
        cfg.write_text(f"bootstrap.servers={addr}\n")
        out = run_cykafka("verify", "-F", str(cfg), "-t", "t", str(f), "--connect-timeout", "1")
    assert out.returncode == 2
    assert f"cannot reach the Kafka cluster at {addr}" in out.stderr


def test_verify_tmp_dir_is_where_it_spills(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --tmp-dir that cannot hold the comparison's spill is named, not replaced by the
    default one."""
    from cykafka.verify.matching import Matcher

    missing = tmp_path / "no" / "such" / "dir"
    with pytest.raises(OSError), Matcher(str(missing), splits_are_errors=True):
        pass
    with Matcher(str(tmp_path), splits_are_errors=True) as m:
        assert Path(m.directory).parent == tmp_path


@pytest.mark.broker  # starts Apache Kafka itself
def test_broker_kafka_listens_on_the_port_given() -> None:
    """`cykafka broker --kafka --port P --host H`: the first node listens on H:P (before:
    on a free port, without a word)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "cykafka.cli", "broker", "--kafka", "--port", str(port),
           "--host", "127.0.0.1", "--topic", "ready"]  # fmt: skip
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=child_env()
    ) as proc:
        try:
            assert proc.stdout is not None
            lines = []
            for line in proc.stdout:
                lines.append(line)
                if line.startswith("Press Ctrl-C"):
                    break
            head = "".join(lines)
            assert f"listening on 127.0.0.1:{port}\n" in head, head
            from cykafka.cluster.reach import probe_topic

            assert probe_topic(f"127.0.0.1:{port}", {}, "ready", 30)[0] == 1
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)
            assert proc.returncode == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
