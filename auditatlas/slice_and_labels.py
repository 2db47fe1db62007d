"""The slice and the label choice every page shares, as names only.

Declared apart from ``schema`` (which re-exports them) so that what only needs the names, the
command line's parser first, does not load pyarrow.
"""
from __future__ import annotations

# The run columns of the slice every page shares (each filters the run column of its name). The
# query layer filters on them and the view state declares them (auditatlas/views), so they live
# here, below both.
SLICE_COLUMNS: tuple[str, ...] = ("corpus", "backbone", "difficulty", "temperature", "domain", "outcome")
# The label choice every page shares beside the slice (``labels=``): the label process the views
# read, with its meaning. The query layer declares how each is read (queries/labels.py).
LABEL_CHOICES: dict[str, str] = {
    "released": "the labels as released",
    "reviewed": "a reviewer's verdict replaces the released label where one exists (unsure leaves it)",
    "agreed": "only steps whose latest verdict equals the released label keep a label",
}
DEFAULT_LABELS = "released"
