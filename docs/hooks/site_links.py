r"""MkDocs hook: the site shows ``protocol/SPEC.md`` too, and every link between pages works.

The Markdown files link to each other by their paths in the repository, so that they read
right in a checkout and on a forge. In the site ``docs/`` is the root, and a page from
elsewhere in the repository (:data:`EXTRA_PAGES`) is added under a path of its own; this
hook rewrites each relative link that names a page of the site, by its repository path,
into a link to that page. A link to a file the site does not hold is left as written, so
``mkdocs build --strict`` fails on it and names it.

A table cell may hold a code span with a pipe in it, written ``\|`` as GitHub wants
(`` `process\|docker` ``); Python-Markdown would show the backslash, so such a span
becomes the same code in HTML, its pipe an entity.
"""

from __future__ import annotations

import html
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

EXTRA_PAGES = {"protocol/SPEC.md": "protocol.md"}
"""Pages outside ``docs/``: their path in the repository, and in the site."""

_LINK = re.compile(r"(\]\(\s*<?)([^)\s>]+)")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:")
_PIPED_CODE = re.compile(r"`([^`\n]*\\\|[^`\n]*)`")


def on_files(files: Files, config: Any) -> Files:
    root = Path(config.config_file_path).parent
    for repository, site in EXTRA_PAGES.items():
        files.append(File.generated(config, site, abs_src_path=str(root / repository)))
    return files


def _in_repository(site: str) -> str:
    """A site page's path in the repository."""
    for repository, path in EXTRA_PAGES.items():
        if path == site:
            return repository
    return f"docs/{site}"


def _in_site(repository: str) -> str | None:
    """A repository file's path in the site, or None when the site does not hold it."""
    if repository in EXTRA_PAGES:
        return EXTRA_PAGES[repository]
    return repository.removeprefix("docs/") if repository.startswith("docs/") else None


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    site_here = page.file.src_uri
    here = posixpath.dirname(_in_repository(site_here))

    def rewrite(link: re.Match[str]) -> str:
        target = link[2]
        if _SCHEME.match(target) or target.startswith("#"):
            return link[0]
        path, hash_, anchor = target.partition("#")
        site = _in_site(posixpath.normpath(posixpath.join(here, path)))
        if site is None:
            return link[0]
        relative = posixpath.relpath(site, posixpath.dirname(site_here) or ".")
        return f"{link[1]}{relative}{hash_}{anchor}"

    lines = _LINK.sub(rewrite, markdown).split("\n")
    return "\n".join(
        _PIPED_CODE.sub(_code_with_pipes, line) if line.lstrip().startswith("|") else line
        for line in lines
    )


def _code_with_pipes(span: re.Match[str]) -> str:
    code = html.escape(span[1].replace("\\|", "|")).replace("|", "&#124;")
    return f"<code>{code}</code>"
