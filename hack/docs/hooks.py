"""mkdocs hooks for the docs site (mkdocs.yml ``hooks:``).

- Home is README.md, which lives at the repository root (GitHub shows it there): it is added
  as ``index.md``, with its links into ``docs/`` made relative to the site (and links to
  README.md from docs/*.md point at it).
- Every nav entry ``reference/<module>.md`` is generated as ``::: <module>`` (mkdocstrings
  renders the module from its docstrings), so the nav in mkdocs.yml is the one list of
  reference pages (tests/unit/docs/test_docs_site.py compares it with the public modules).
- docs/TUTORIAL.md joins the nav after Home when it exists.
- A relative link to a repository file that is not part of the site (``bench/README.md``,
  ``examples/...``) becomes the path in code: the site has no copy to link to, and a broken
  link would fail the strict build.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = "reference/"
_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s#]+)(#[^)\s]*)?\)")


def _reference_pages(nav: Any) -> list[str]:
    pages: list[str] = []
    if isinstance(nav, str):
        if nav.startswith(REFERENCE):
            pages.append(nav)
    elif isinstance(nav, dict):
        for value in nav.values():
            pages += _reference_pages(value)
    elif isinstance(nav, list):
        for item in nav:
            pages += _reference_pages(item)
    return pages


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    nav = config.nav
    if nav is not None and (Path(config.docs_dir) / "TUTORIAL.md").exists():
        at = next((i + 1 for i, item in enumerate(nav) if item == {"Home": "index.md"}), 0)
        nav.insert(at, {"Your first operator": "TUTORIAL.md"})
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "index.md", content=readme))
    for page in _reference_pages(config.nav):
        module = page.removeprefix(REFERENCE).removesuffix(".md")
        files.append(File.generated(config, page, content=f"::: {module}\n"))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    src = page.file.src_uri
    # Where the page's source lives in the repository: README.md at the root, the rest in docs/.
    docs_dir = Path(config.docs_dir).resolve()
    source_dir = ROOT if src == "index.md" else (docs_dir / src).parent
    page_dir = (docs_dir / src).parent

    def relink(match: re.Match[str]) -> str:
        text, target, anchor = match.group(1), match.group(2), match.group(3) or ""
        if "://" in target or target.startswith(("mailto:", "/")):
            return match.group(0)
        path = (source_dir / target).resolve()
        if path == ROOT / "README.md":  # the home page
            path = docs_dir / "index.md"
        if path.is_relative_to(docs_dir) and files.get_file_from_path(
            path.relative_to(docs_dir).as_posix()
        ):
            rel = Path(os.path.relpath(path, page_dir)).as_posix()
            return f"[{text}]({rel}{anchor})"
        if path.exists() and path.is_relative_to(ROOT):
            shown = path.relative_to(ROOT).as_posix()
            return f"`{shown}`" if text.strip("`") == shown else f"{text} (`{shown}`)"
        return match.group(0)

    return _LINK.sub(relink, markdown)
