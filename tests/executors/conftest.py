"""The TLS files of the test clusters, made by the cluster guide's own commands.

``docs/cluster.md`` makes the cluster's CA and one certificate its members
share with ``openssl``; :func:`cluster_tls` runs that very block (so the guide is checked
each time the cluster tests run), and every scheduler, worker and client of the tests uses
what it made.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from referee.executors.security import ClusterSecurity, load_cluster_security

ROOT = Path(__file__).resolve().parents[2]
README_BLOCK = "# the cluster's CA, and one certificate its members share\n"


def readme_certificate_commands() -> str:
    """docs/cluster.md's fenced block that makes the cluster's certificates."""
    text = (ROOT / "docs" / "cluster.md").read_text(encoding="utf-8")
    start = text.index("```\n" + README_BLOCK) + len("```\n")
    return text[start : text.index("```", start)]


@dataclass(frozen=True)
class ClusterTLS:
    """The cluster guide's ``cluster-tls`` folder: the flags Dask's commands take, and the
    coordinator's security file."""

    folder: Path

    @property
    def flags(self) -> list[str]:
        return [
            "--tls-ca-file",
            str(self.folder / "ca.pem"),
            "--tls-cert",
            str(self.folder / "member.pem"),
            "--tls-key",
            str(self.folder / "member.key"),
        ]

    @property
    def file(self) -> Path:
        return self.folder / "security.toml"

    @property
    def security(self) -> ClusterSecurity:
        return load_cluster_security(self.file)

    def client_security(self) -> Any:
        """A ``distributed.Security`` for the tests' own clients."""
        from distributed import Security

        return Security(
            require_encryption=True,
            tls_ca_file=str(self.folder / "ca.pem"),
            tls_client_cert=str(self.folder / "member.pem"),
            tls_client_key=str(self.folder / "member.key"),
        )


@pytest.fixture(scope="session")
def cluster_tls(tmp_path_factory: pytest.TempPathFactory) -> ClusterTLS:
    where = tmp_path_factory.mktemp("tls")
    made = subprocess.run(
        ["sh", "-e"],
        input=readme_certificate_commands(),
        cwd=where,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, f"docs/cluster.md's certificate commands failed: {made.stderr}"
    return ClusterTLS(where / "cluster-tls")
