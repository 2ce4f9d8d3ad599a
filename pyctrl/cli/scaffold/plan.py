"""What one scaffold command writes, checked in full before anything is written.

Contract: a :class:`Plan` collects the command's files, each under one ownership rule
(docs/SCAFFOLD.md, "Scaffolding again"):

* :meth:`Plan.once`: a file the user owns from the moment it exists. Written when missing;
  when present it is kept as it is (reported ``kept``), whatever it holds, unless ``force``.
* :meth:`Plan.always`: a file the scaffold owns (the ``PROJECT`` record, kustomizations that
  list the kinds): rewritten from the project record each time; its first line says so.
* :meth:`Plan.insert`: a line added to a shared file just before its marker line
  ``# +pyctrl:scaffold:<region>`` (the wiring module, the Makefile), once: a line already
  there anywhere in the file is not added again. With ``below=True`` (imports) it goes into
  the block of lines just below the marker instead, which is kept sorted (as isort
  would). A missing file or marker is an error naming both, raised before anything is
  written.

:meth:`Plan.apply` first checks every insertion, then writes, so a refused command writes
nothing. It returns one ``created``/``updated``/``kept``/``unchanged`` line per file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pyctrl.cli import UsageError, read_old, write_text

__all__ = ["MARKER", "Plan"]

MARKER = "+pyctrl:scaffold:"


@dataclass
class Plan:
    """The files of one scaffold command under ``root`` (see module docstring)."""

    root: Path
    force: bool = False
    _once: dict[str, str] = field(default_factory=dict)
    _always: dict[str, str] = field(default_factory=dict)
    _inserts: list[tuple[str, str, str, bool]] = field(default_factory=list)

    def once(self, path: str, text: str) -> None:
        self._once[path] = text

    def always(self, path: str, text: str) -> None:
        self._always[path] = text

    def insert(self, path: str, region: str, line: str, *, below: bool = False) -> None:
        self._inserts.append((path, region, line, below))

    def _inserted(self, texts: dict[str, str]) -> dict[str, str]:
        """The shared files with their new lines, or UsageError (nothing written yet)."""
        out: dict[str, str] = {}
        for path, region, line, below in self._inserts:
            text = out.get(path)
            if text is None:
                text = texts.get(path) or read_old(self.root / path)
            if not text:
                raise UsageError(f"{path}: missing; it holds the '# {MARKER}{region}' "
                                 "marker new entries go before (restore it, or add the marker)")
            lines = text.splitlines(keepends=True)
            at = next((i for i, ln in enumerate(lines)
                       if ln.strip().endswith(f"{MARKER}{region}")), None)
            if at is None:
                raise UsageError(f"{path}: no '# {MARKER}{region}' marker line; put it back "
                                 f"where new entries should go (this one is {line.strip()!r})")
            if not any(ln.rstrip("\n") == line for ln in lines):
                indent = lines[at][:len(lines[at]) - len(lines[at].lstrip())]
                new = f"{indent}{line.strip()}\n"
                if below:
                    end = at + 1
                    while end < len(lines) and lines[end].strip():
                        end += 1
                    lines[at + 1:end] = sorted([*lines[at + 1:end], new])
                else:
                    lines.insert(at, new)
            out[path] = "".join(lines)
        return out

    def apply(self) -> list[str]:
        """Check, then write (module docstring); one report line per file."""
        pending: dict[str, str] = {}
        report: list[str] = []
        for path, text in self._once.items():
            if (self.root / path).exists() and not self.force:
                same = read_old(self.root / path) == text
                report.append(f"{'unchanged' if same else 'kept'} {path}")
                continue
            pending[path] = text
        pending.update(self._always)
        for path, text in self._inserted(pending).items():
            pending[path] = text
        report = [line for line in report if line.split(" ", 1)[1] not in pending]
        for path, text in pending.items():
            target = self.root / path
            existed = target.exists()
            if existed and read_old(target) == text:
                report.append(f"unchanged {path}")
                continue
            write_text(target, text)
            if target.suffix == ".sh":
                target.chmod(0o755)
            report.append(f"{'updated' if existed else 'created'} {path}")
        return sorted(report, key=lambda line: line.split(" ", 1)[1])
