"""Who may talk to the cluster (referee/executors/security.py): the rule every command with
``--cluster`` obeys, the cluster security file, and what docs/cluster.md quotes of them.

No cluster runs here (the attacks on real ones are in test_cluster_hostile.py): each
refusal comes before a connection is tried.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from referee.cli import main
from referee.errors import UsageError
from referee.executors.cluster import DaskExecutor
from referee.executors.security import (
    DASK_PACKAGES,
    INSECURE_NOTE,
    ClusterSecurity,
    check_cluster,
    load_cluster_security,
)
from referee.installation import Installation, installation
from tests.executors.conftest import ROOT, ClusterTLS
from tests.tournament.conftest import write_tournament

NAMES = ("ann", "bob", "cid", "dee")
SOME = ClusterSecurity(Path("ca.pem"), Path("member.pem"), Path("member.key"), Path("s.toml"))


# --------------------------------------------------------------------------- the rule


@pytest.mark.parametrize(
    "address", ["tcp://127.0.0.1:8786", "127.0.0.1:8786", "tcp://10.0.0.5:8786", "ws://h:1"]
)
def test_a_plain_address_is_refused_loopback_included(address: str) -> None:
    with pytest.raises(UsageError) as refused:
        check_cluster(address, None, insecure=False)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{address} is plain ")
    assert "--cluster tls://HOST:PORT --cluster-security FILE" in message
    assert message.endswith("or accept that with --insecure-cluster")


def test_insecure_cluster_lets_a_plain_address_through_and_says_what_it_exposes() -> None:
    notes = check_cluster("tcp://127.0.0.1:8786", None, insecure=True)
    assert notes == (INSECURE_NOTE.format(address="tcp://127.0.0.1:8786", scheme="tcp"),)
    assert "can run any code on the scheduler and on every worker" in notes[0]
    assert check_cluster("tls://h:8786", SOME, insecure=False) == ()
    assert check_cluster("wss://h:8786", SOME, insecure=False) == ()
    assert check_cluster(None, None, insecure=False) == ()


@pytest.mark.parametrize(
    ("address", "security", "insecure", "says"),
    [
        ("tls://h:8786", None, False, "speaks TLS: give the cluster's CA and this coordinator"),
        ("tls://h:8786", SOME, True, "--insecure-cluster is for a plain tcp:// address"),
        ("tcp://h:8786", SOME, False, "which --cluster-security cannot secure"),
        (None, SOME, False, "the local cluster makes its own for each run"),
        (None, None, True, "the local cluster always uses TLS"),
    ],
)
def test_contradictory_choices_are_one_line(
    address: str | None, security: ClusterSecurity | None, insecure: bool, says: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(says)) as refused:
        check_cluster(address, security, insecure)
    assert "\n" not in str(refused.value)


def test_the_executor_applies_the_rule_before_any_connection() -> None:
    with pytest.raises(UsageError, match="is plain tcp"):
        DaskExecutor("tcp://127.0.0.1:1")
    assert (
        DaskExecutor("tcp://127.0.0.1:1", insecure=True)
        .notes[0]
        .startswith("referee: --insecure-cluster: tcp://127.0.0.1:1 is plain tcp")
    )


# --------------------------------------------------------------------------- the commands


def _commands_with_a_cluster(
    group: click.Group, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, ...]]:
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands_with_a_cluster(command, (*path, name))
        elif any(param.name == "cluster" for param in command.params):
            yield (*path, name)


COMMANDS = sorted(_commands_with_a_cluster(main))


def test_the_commands_with_a_cluster_are_found() -> None:
    assert ("tournament", "run") in COMMANDS and ("league", "run") in COMMANDS


@pytest.fixture
def tournament(tmp_path: Path) -> Path:
    return write_tournament(tmp_path / "t", bots=4, table_size=3, names=NAMES)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_with_a_cluster_refuses_a_plain_address(
    command: tuple[str, ...], tournament: Path
) -> None:
    for extra in ([], ["--executor", "dask"]):
        result = CliRunner().invoke(
            main, [*command, str(tournament), "--cluster", "tcp://127.0.0.1:9", *extra]
        )
        assert result.exit_code == 2, result.output
        assert result.output.startswith("referee: tcp://127.0.0.1:9 is plain tcp: "), result.output
        assert result.output.count("\n") == 1


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_refuses_a_plain_address_from_the_file(
    command: tuple[str, ...], tournament: Path
) -> None:
    tournament.write_text(
        'executor = { kind = "dask", cluster = "tcp://127.0.0.1:9" }\n' + tournament.read_text()
    )
    result = CliRunner().invoke(main, [*command, str(tournament)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("referee: tcp://127.0.0.1:9 is plain tcp: "), result.output


def test_the_files_security_is_read_beside_it(tournament: Path) -> None:
    tournament.write_text(
        'executor = { kind = "dask", cluster = "tls://127.0.0.1:9", security = "tls/s.toml" }\n'
        + tournament.read_text()
    )
    result = CliRunner().invoke(main, ["tournament", "run", str(tournament)])
    assert result.exit_code == 2, result.output
    wanted = (
        f"referee: cannot read the cluster security file {tournament.parent / 'tls' / 's.toml'}"
    )
    assert result.output.startswith(wanted), result.output


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (
            ["--executor", "local", "--cluster-security", "s.toml"],
            "--cluster-security is for a Dask cluster: it goes with --executor dask",
        ),
        (
            ["--executor", "local", "--insecure-cluster"],
            "--insecure-cluster is for a Dask cluster: it goes with --executor dask",
        ),
        (
            ["--insecure-cluster"],
            "--insecure-cluster is for a Dask cluster: it goes with --cluster",
        ),
        (["--executor", "dask", "--insecure-cluster"], "the local cluster always uses TLS"),
    ],
)
def test_cluster_flags_without_a_cluster_are_one_line(
    flags: list[str], says: str, tournament: Path
) -> None:
    result = CliRunner().invoke(main, ["tournament", "run", str(tournament), *flags])
    assert result.exit_code == 2, result.output
    assert says in result.output and result.output.count("\n") == 1, result.output


def test_insecure_cluster_says_once_what_it_exposes_before_it_connects(
    tournament: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nobody listens there: the run ends at the connection, after the note (not after
    # the 30 s a real run waits for a scheduler).
    defaults = DaskExecutor.__init__.__kwdefaults__
    assert defaults is not None  # it has keyword-only arguments
    monkeypatch.setitem(defaults, "connect_timeout_s", 1.0)
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{unused.getsockname()[1]}"
    result = CliRunner().invoke(
        main, ["tournament", "run", str(tournament), "--cluster", address, "--insecure-cluster"]
    )
    assert result.exit_code == 2, result.output
    note = INSECURE_NOTE.format(address=address, scheme="tcp")
    assert result.output.count(note) == 1
    assert result.output.index(note) < result.output.index("cannot reach the Dask scheduler")


def test_without_cryptography_the_local_cluster_names_the_install_command(
    tournament: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cryptography", None)  # as if it were not installed
    result = CliRunner().invoke(
        main, ["tournament", "run", str(tournament), "--executor", "dask", "--workers", "1"]
    )
    assert result.exit_code == 2, result.output
    hint = installation().install(DASK_PACKAGES, "dask")
    assert (
        "the local Dask cluster's TLS certificates need the cryptography package" in result.output
    )
    assert result.output.rstrip().endswith(f"install it with: {hint}"), result.output


# --------------------------------------------------------------------------- the file


def test_the_readmes_security_file_loads(cluster_tls: ClusterTLS) -> None:
    security = load_cluster_security(cluster_tls.file)
    assert security == ClusterSecurity(
        cluster_tls.folder / "ca.pem",
        cluster_tls.folder / "member.pem",
        cluster_tls.folder / "member.key",
        cluster_tls.file,
    )
    assert os.stat(security.key or security.cert).st_mode & 0o077 == 0  # the guide's umask


def _copy(cluster_tls: ClusterTLS, where: Path, text: str) -> Path:
    where.mkdir()
    for name in ("ca.pem", "member.pem", "member.key"):
        (where / name).write_bytes((cluster_tls.folder / name).read_bytes())
        (where / name).chmod(0o600)
    (where / "s.toml").write_text(text)
    return where / "s.toml"


GOOD = 'ca-file = "ca.pem"\ncert = "member.pem"\nkey = "member.key"\n'


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("ca-file = ", "not valid TOML"),
        (
            GOOD + 'password = "x"\n',
            "unknown key 'password'; a cluster security file has ca-file, cert and key",
        ),
        ('cert = "member.pem"\n', "ca-file is missing"),
        (GOOD.replace('"ca.pem"', "1"), "ca-file must be the path of a PEM file, not 1"),
        (GOOD.replace('"ca.pem"', '"gone.pem"'), "ca-file: cannot read"),
        (GOOD.replace('"ca.pem"', '"."'), "ca-file: cannot read"),
        (GOOD.replace('"ca.pem"', '"member.key"'), "ca-file: "),
        (GOOD.replace('"member.key"', '"ca.pem"'), "cert and key do not load together ("),
    ],
)
def test_a_bad_security_file_is_one_line_naming_it(
    text: str, says: str, cluster_tls: ClusterTLS, tmp_path: Path
) -> None:
    path = _copy(cluster_tls, tmp_path / "tls", text)
    (tmp_path / "tls" / "ca.pem").chmod(0o600)
    with pytest.raises(UsageError, match=re.escape(says)) as refused:
        load_cluster_security(path)
    message = str(refused.value)
    assert str(path) in message and "\n" not in message, message


def test_a_key_other_users_can_read_is_refused(cluster_tls: ClusterTLS, tmp_path: Path) -> None:
    path = _copy(cluster_tls, tmp_path / "tls", GOOD)
    key = tmp_path / "tls" / "member.key"
    key.chmod(0o644)
    with pytest.raises(
        UsageError,
        match=re.escape(
            f"the private key {key} can be read by other users (mode 0644); chmod 600 {key}"
        ),
    ):
        load_cluster_security(path)
    key.chmod(0o600)
    assert load_cluster_security(path).key == key


def test_an_encrypted_or_foreign_key_is_refused_without_a_prompt(
    cluster_tls: ClusterTLS, tmp_path: Path
) -> None:
    path = _copy(cluster_tls, tmp_path / "tls", GOOD)
    key = tmp_path / "tls" / "member.key"
    locked = tmp_path / "locked.key"
    subprocess.run(
        [
            "openssl",
            "pkey",
            "-in",
            str(key),
            "-out",
            str(locked),
            "-aes256",
            "-passout",
            "pass:secret",
        ],
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    key.write_bytes(locked.read_bytes())
    with pytest.raises(UsageError, match="cert and key do not load together"):
        load_cluster_security(path)
    subprocess.run(
        [
            "openssl",
            "genpkey",
            "-algorithm",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            str(key),
        ],
        check=True,
        capture_output=True,
    )
    with pytest.raises(UsageError, match="cert and key do not load together"):
        load_cluster_security(path)


# ----------------------------------------------------------------------- docs/cluster.md


def _readme_section() -> str:
    """The cluster guide, its lines joined (quotes in it may wrap)."""
    return " ".join((ROOT / "docs" / "cluster.md").read_text(encoding="utf-8").split())


def test_the_readme_quotes_the_refusal_as_it_is() -> None:
    with pytest.raises(UsageError) as refused:
        check_cluster("tcp://127.0.0.1:8786", None, insecure=False)
    assert f"`referee: {refused.value}`" in _readme_section()


def test_the_readmes_install_line_is_the_hint_the_referee_prints() -> None:
    section = _readme_section()
    for kind, python in (("pipx", "python3"), ("venv", "/path/to/env/bin/python")):
        command = Installation(kind, python).install(DASK_PACKAGES, "dask")  # type: ignore[arg-type]
        assert f"`{command}`" in section, command
    assert "arschloch-referee[dask]" not in section  # on no package index (docs/install.md)
