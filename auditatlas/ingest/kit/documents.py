"""The skeleton of a format whose release is one JSON object per run file (MAADBench's room
runs): finding the files, cutting them into chunks, converting a chunk run by run into row
buffers, and the all-or-nothing rule per run.

The format supplies what is its own (:class:`RunDocuments`): how its files are named in
problems, the keys a file must have, its row buffers, the conversion of one parsed run, and
the counters a chunk reports. A run with any problem leaves no row behind (its rows are rolled
back), and the problems of every file are collected, so one failed ingest lists them all.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import IngestFailed, InputError
from .jsonfiles import MAX_DEPTH, has_keys, load_object, walk_json_files
from .rows import RunBuffers, no_cycle_collection

if TYPE_CHECKING:
    from ..stream import Chunk

# A folder's ``can_read`` looks at this many files, not the whole (possibly huge) tree.
PEEK_FILES = 5


@dataclass(frozen=True)
class RunDocuments:
    """One format of one-object-per-run files. Every field is module-level, so it pickles to a worker."""

    what: str  # the document in the format's terms ("a MAADBench trace"), for problems
    required: tuple[str, ...]  # top-level keys every file must have
    buffers: Callable[[], RunBuffers]  # fresh row buffers for one chunk
    convert: Callable[[dict, str, str, Any, list[InputError]], None]  # (doc, rel, corpus, out, problems)
    counters: Callable[[Any], dict[str, int]]  # what a chunk reports, from its buffers

    def can_read(self, path: Path) -> bool:
        """A file of this format, or a folder whose first JSON files include one."""
        path = Path(path)
        if path.is_file():
            return path.suffix == ".json" and has_keys(path, self.required)
        if path.is_dir():
            for n, (file, _rel) in enumerate(walk_json_files(path)):
                if has_keys(file, self.required):
                    return True
                if n + 1 >= PEEK_FILES:
                    break
        return False

    def files(self, path: Path | None) -> list[tuple[str, str]]:
        """``(file, path under the root)`` of every file to read; a missing or empty path fails."""
        if path is None:
            raise IngestFailed([InputError("<no path>", None, f"{self.what} file or folder is needed.")])
        path = Path(path)
        if path.is_file():
            files = [(str(path), path.name)]
        elif path.is_dir():
            files = list(walk_json_files(path))
        else:
            raise IngestFailed([InputError(path, None, "no such file or folder.")])
        if not files:
            raise IngestFailed([InputError(path, None, "holds no *.json trace files.")])
        return files

    def convert_files(self, files: list[tuple[str, str]], corpus: str) -> Chunk:
        """One chunk: ``(file, path under the root)`` pairs into tables."""
        out, problems = self.buffers(), []
        with no_cycle_collection():
            for file, rel in files:
                self.read_file(file, rel, corpus, out, problems)
        return self._chunk(out, problems, len(files))

    def convert_documents(self, documents: Iterable[tuple[str, dict]], corpus: str) -> Chunk:
        """Already-parsed runs (``(path under the root, document)``), converted exactly as files are."""
        out, problems, n = self.buffers(), [], 0
        with no_cycle_collection():
            for rel, doc in documents:
                n += 1
                self.convert_document(doc, rel, corpus, out, problems)
        return self._chunk(out, problems, n)

    def read_file(self, file: str, rel: str, corpus: str, out: RunBuffers, problems: list[InputError]) -> None:
        doc = load_object(file, rel, problems, what=self.what, required=self.required)
        if doc is not None:
            self.convert_document(doc, rel, corpus, out, problems)

    def convert_document(self, doc: dict, rel: str, corpus: str, out: RunBuffers,
                         problems: list[InputError]) -> None:
        """Convert one parsed run; a run with any problem leaves no row behind."""
        before = len(problems)
        marks = out.mark()
        try:
            self.convert(doc, rel, corpus, out, problems)
        except RecursionError:  # parsed, but too deep to encode into text/extra columns
            problems.append(InputError(rel, None, f"nests arrays or objects more than {MAX_DEPTH} levels deep; "
                                                  f"{self.what} is never shaped like that."))
        if len(problems) > before:
            out.rollback(marks)
        else:
            out.run_done()

    def _chunk(self, out: RunBuffers, problems: list[InputError], n_files: int) -> Chunk:
        from ..stream import Chunk

        out.flush()
        counters = {"files": n_files, **self.counters(out)}
        if problems:
            return Chunk({}, problems, counters)
        return Chunk(out.to_arrow(), [], counters)


def file_chunks(files: list[tuple[str, str]], size: int) -> list[list[tuple[str, str]]]:
    """``files`` in order of their path under the root, ``size`` to a chunk.

    Run ids are made of that path, so chunks in this order write parts already sorted by run.
    """
    ordered = sorted(files, key=lambda item: item[1])
    return [ordered[i:i + size] for i in range(0, len(ordered), size)]
