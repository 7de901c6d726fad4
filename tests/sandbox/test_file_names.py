"""A single-file bot keeps its file name in the process sandbox, whatever the name holds.

Docker's volume string splits on ``:`` and ``,``; bubblewrap takes its paths as separate
arguments. Both backends are checked with the same names (the Docker side is in
``test_docker.py``).
"""

from __future__ import annotations

import asyncio
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.sandbox import BotSpec, Limits, make_staging_root, remove_staging_root
from tests.sandbox.bot_processes import make_sandbox

pytestmark = pytest.mark.slow

FILES = ["evil:x.py", "a\nb.py", "two words,comma.py", "--help.py"]
LIMITS = Limits(memory_mb=256)

NAMES_BOT = """
    import json, os
    print(json.dumps({"file": os.path.basename(__file__), "listing": os.listdir(".")}), flush=True)
"""


@pytest.fixture
def staging() -> Iterator[Path]:
    root = make_staging_root()
    yield root
    remove_staging_root(root)


@pytest.mark.parametrize("file", FILES)
def test_a_single_file_bot_keeps_any_file_name(mode: str, staging: Path, file: str) -> None:
    folder = staging / "named"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    (folder / file).write_text(textwrap.dedent(NAMES_BOT))
    (folder / file).chmod(0o644)
    # The command load_bot gives a single .py file ("./" keeps "--help.py" a script).
    bot = BotSpec(name="named", folder=folder, command=("python3", f"./{file}"), single_file=file)

    async def scenario() -> object:
        process = await make_sandbox(mode).start(bot, LIMITS)
        try:
            line = await asyncio.wait_for(process.stdout.readline(), 20)
        finally:
            await process.cleanup()
        return json.loads(line)

    seen = asyncio.run(asyncio.wait_for(scenario(), 60))
    listing = [file] if mode == "bwrap" else sorted(p.name for p in folder.iterdir())
    assert seen == {"file": file, "listing": listing}
