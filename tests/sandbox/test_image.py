"""The offline image build's host checks, without Docker or debootstrap."""

from __future__ import annotations

import pytest

from referee.errors import UsageError
from referee.sandbox.image import host_suite


def test_host_suite_is_the_os_release_codename() -> None:
    assert host_suite(lambda: {"ID": "debian", "VERSION_CODENAME": "trixie"}) == "trixie"


@pytest.mark.parametrize(
    "os_release",
    [{"ID": "arch"}, {"ID": "debian", "VERSION_CODENAME": ""}, OSError(2, "no os-release")],
)
def test_a_host_without_a_codename_is_told_to_build_online(
    os_release: dict[str, str] | OSError,
) -> None:
    def read() -> dict[str, str]:
        if isinstance(os_release, OSError):
            raise os_release
        return os_release

    with pytest.raises(UsageError, match=r"needs a Debian host .* build online"):
        host_suite(read)


def test_the_online_build_uses_the_dockerfile_the_referee_carries() -> None:
    """Its folder is the build context: from a wheel, the Dockerfile under referee/assets."""
    from referee import resources
    from referee.sandbox import image

    calls: list[dict[str, object]] = []

    class Api:
        def build(self, **kwargs: object) -> list[dict[str, str]]:
            calls.append(kwargs)
            return [{"stream": "Successfully built\n"}]

    class Client:
        api = Api()

    lines: list[str] = []
    image._build_online(Client(), "referee-test:x", lines.append)
    recipe = resources.dockerfile()
    assert calls == [
        {
            "path": str(recipe.parent),
            "dockerfile": "Dockerfile",
            "tag": "referee-test:x",
            "rm": True,
            "decode": True,
        }
    ]
    assert lines[0] == f"docker build -t referee-test:x -f {recipe}"
