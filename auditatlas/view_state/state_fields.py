"""The mechanics of declared view state: a typed field, a page's state, its parse and its URL.

A page's view state is data (DESIGN.md, "Links"): the URL, a tour stop and an export are
renderings of the same declaration. ``PageState.parse`` turns a query string into typed
values and one plain sentence per value it cannot use (the drawing side escapes them, so a
link's text is shown as text); ``url`` writes the values back, only those that differ from
the defaults, in the declaration's order, so one view has one link.

No Streamlit and no store here: the values a store holds (a run, a backbone) are checked by
the page against the store, with ``not_held`` giving the sentence.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from ..schema import DEFAULT_LABELS, LABEL_CHOICES, SLICE_COLUMNS

KINDS = ("str", "int", "float", "bool", "choice", "list")
TRUE_TEXTS = ("1", "true", "yes")
FALSE_TEXTS = ("0", "false", "no")
# Streamlit's own query parameters: a link may carry them on any page.
STREAMLIT_PARAMS = frozenset({"embed", "embed_options"})
# The app's own parameters that are no view's state: the tour draft the author's URL carries
# (components/tour_draft.py). Known on every page, never written into a view's link.
APP_PARAMS = frozenset({"draft"})


@dataclass(frozen=True)
class Field:
    """One URL parameter of a page.

    ``kind``: str, int, float, bool, choice (one of ``choices``) or list (repeatable; its
    items are ``item`` values, from ``choices`` when given, exactly ``count`` of them when
    given). ``low``/``high`` bound int and float values (and int items), inclusive.
    ``expects`` and ``fallback`` word the problem sentence: "The link's step 'abc' is not
    {expects}; {fallback}." (defaults are derived from the kind, the bounds and the default).
    """

    name: str
    kind: str
    default: Any = None
    help: str = ""
    choices: tuple[str, ...] | None = None
    low: float | None = None
    high: float | None = None
    item: str = "str"
    count: int | None = None
    expects: str | None = None
    fallback: str | None = None
    max_chars: int = 1000  # a str value longer than this is refused (a name, a query: never a document)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"field {self.name}: kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if self.kind == "choice" and not self.choices:
            raise ValueError(f"field {self.name}: a choice needs its choices")

    # ------------------------------------------------------------------ reading one parameter

    def parse(self, raw: Sequence[str]) -> tuple[Any, str | None]:
        """The value ``raw`` (the parameter's values in the URL) asks for, and the sentence
        saying why it cannot be used (None when it can). A missing or empty parameter is the
        default, with no sentence."""
        if self.kind == "list":
            return self._parse_list([v for v in raw if v != ""])
        text = raw[-1] if raw else ""
        if text == "":
            return self.default, None
        value = self._parse_one(text, self.kind)
        if value is _BAD:
            return self.default, self.problem(text)
        return value, None

    def _parse_one(self, text: str, kind: str) -> Any:
        if kind == "str":
            return text if len(text) <= self.max_chars and not _CONTROL.search(text) else _BAD
        if kind == "choice":
            return text if text in (self.choices or ()) else _BAD
        if kind == "bool":
            low = text.lower()
            return True if low in TRUE_TEXTS else False if low in FALSE_TEXTS else _BAD
        try:
            value = int(text) if kind == "int" else float(text)
        except ValueError:
            return _BAD
        if isinstance(value, float) and not math.isfinite(value):
            return _BAD
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            return _BAD
        return value

    def _parse_list(self, raw: list[str]) -> tuple[list[Any], str | None]:
        if not raw:
            return list(self.default or []), None
        kept, bad = [], []
        for text in raw:
            value = self._parse_one(text, "choice" if self.choices else self.item)
            (bad if value is _BAD else kept).append(text if value is _BAD else value)
        if self.count is not None and len(raw) != self.count:
            return list(self.default or []), self.problem(", ".join(raw))
        if bad and self.count is not None:
            return list(self.default or []), self.problem(", ".join(bad))
        if bad:
            return kept, self.problem(", ".join(bad), fallback="left out" if kept else None)
        return kept, None

    # ------------------------------------------------------------------ the problem sentence

    def problem(self, text: str, fallback: str | None = None) -> str:
        """One sentence naming this parameter and the value the link gave it (a long value cut,
        control characters shown as escapes: the sentence is one short line)."""
        return (f"The link's {self.name} '{shown_value(text)}' {self.is_not()}; "
                f"{fallback or self.fallback or self.default_fallback()}.")

    def shape_problems(self, raw: Sequence[str]) -> list[str]:
        """Sentences for what :meth:`parse` reads without a word: a value given twice to a
        parameter that holds one (the last is used), an empty value (left out)."""
        found = []
        if self.kind != "list" and len(raw) > 1:
            used = self.parse(raw)[0]
            found.append(f"The link gives {self.name} {len(raw)} values "
                         f"({', '.join(shown_value(v) for v in raw)}); {self.name} holds one, "
                         f"using {_text(used) if used not in (None, '') else 'none'}.")
        if "" in raw:
            rest = "left out" if self.kind == "list" or len(raw) > 1 else self.default_fallback()
            found.append(f"The link gives {self.name} an empty value; {rest}.")
        return found

    def is_not(self) -> str:
        if self.expects:
            return f"is not {self.expects}"
        if self.kind == "str":
            return f"is not a value of at most {self.max_chars:,} characters without control characters"
        choices = ("1", "0") if self.kind == "bool" else self.choices
        if choices:
            if len(choices) == 2:
                return f"is neither {choices[0]} nor {choices[1]}"
            return "is not one of " + ", ".join(choices)
        kind = self.item if self.kind == "list" else self.kind
        what = {"int": "a whole number", "float": "a number"}.get(kind, "a value")
        if self.count:
            what = f"{self.count} values, each {what}"
        return f"is not {what}{self._bounds()}"

    def _bounds(self) -> str:
        if self.low is not None and self.high is not None:
            return f" from {_text(self.low)} to {_text(self.high)}"
        if self.low is not None:
            return f" ≥ {_text(self.low)}"
        if self.high is not None:
            return f" ≤ {_text(self.high)}"
        return ""

    def default_fallback(self) -> str:
        if self.default in (None, "", [], ()):
            return "left out"
        if isinstance(self.default, (list, tuple)):
            return "using " + ", ".join(_text(v) for v in self.default)
        return f"using {_text(self.default)}"

    # ------------------------------------------------------------------ writing it back

    def items(self, value: Any) -> list[tuple[str, str]]:
        """The (name, text) pairs that write ``value`` into a URL; none for the default."""
        if value is None or value == "" or value == self.default:
            return []
        if isinstance(value, (list, tuple)):
            if list(value) == list(self.default or []):
                return []
            return [(self.name, _text(v)) for v in value]
        if self.kind == "bool":
            return [(self.name, "1")] if value else []
        return [(self.name, _text(value))]

    def describe(self) -> str:
        """Kind, choices or range, default: the README's words for this parameter."""
        kind = f"list of {self.item}" if self.kind == "list" else self.kind
        if self.choices:
            kind += ": " + " \\| ".join(f"`{c}`" for c in self.choices)
        elif self._bounds():
            kind += self._bounds()
        if self.count:
            kind += f", {self.count} values"
        default = self.default_fallback().removeprefix("using ") if self.default not in (None, "", [], ()) else "—"
        return f"{kind}; default {default}"


_BAD = object()  # a value the field cannot use (never a real value)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # NUL and the other controls (tab and newline kept)
_SHOWN_CHARS = 60


def shown_value(text: str) -> str:
    """A link's value as a sentence quotes it: control characters escaped, cut past 60 characters."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", text)
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}… ({len(text):,} characters)"


def refusal(sentence: str) -> str:
    """A problem sentence worded for a caller that refuses the link instead of falling back
    (the export): what follows its last "; " (", using PRE") is what the page does, not it."""
    head, sep, _ = sentence.rpartition("; ")
    return f"{head}." if sep else sentence


def _text(value: Any) -> str:
    """A value as a link writes it: whole floats keep their ``.0`` (``6.0``) as before."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def values_of(params: Any, name: str) -> list[str]:
    """Every value ``params`` (``st.query_params``, or a plain mapping) gives ``name``."""
    if hasattr(params, "get_all"):
        return [str(v) for v in params.get_all(name)]
    value = params.get(name) if isinstance(params, Mapping) else None
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def names_in(params: Any) -> list[str]:
    return [str(k) for k in (params.keys() if hasattr(params, "keys") else [])]


# ---------------------------------------------------------------------------- the shared slice

SLICE_HELP = {
    "corpus": "corpora to show", "backbone": "LLM backbones", "difficulty": "run difficulties",
    "temperature": "sampling temperatures", "domain": "task domains", "outcome": "run outcomes",
}
# Repeatable, values from the store (checked against it by the sidebar): every page reads them.
SLICE: tuple[Field, ...] = tuple(Field(c, "list", default=[], help=SLICE_HELP[c]) for c in SLICE_COLUMNS)
SLICE_LABELS = {"corpus": "Corpus", "backbone": "Backbone (LLM)", "difficulty": "Difficulty",
                "temperature": "Temperature", "domain": "Domain", "outcome": "Run outcome"}


def describe_slice(slice_: Mapping[str, Iterable[Any]]) -> str:
    """The slice in words, as the pages print it: "backbone (llm) in GPT-4.1; ..." or everything
    (the label choice beside it is told by its own caption line)."""
    parts = [f"{SLICE_LABELS[c].lower()} in {', '.join(map(str, v))}" for c, v in slice_.items()
             if v and c in SLICE_LABELS]
    return "; ".join(parts) if parts else "everything loaded"


# ---------------------------------------------------------------------------- the label choice

# Shared by every page beside the slice, and carried in the same mapping (``slice["labels"]``):
# whatever takes the slice (a query, an analysis, a link, an export) then reads the chosen labels.
LABELS = Field("labels", "choice", default=DEFAULT_LABELS, choices=tuple(LABEL_CHOICES),
               help="the labels every view reads: " + "; ".join(f"{k}: {v}" for k, v in LABEL_CHOICES.items()))
SHARED_NAMES: frozenset[str] = frozenset({*SLICE_COLUMNS, LABELS.name})


def labels_of(slice_: Mapping[str, Any] | None) -> str:
    """The label choice a slice mapping carries (the released labels when none)."""
    return str((slice_ or {}).get(LABELS.name) or LABELS.default)


def on_release(slice_: Mapping[str, Any] | None) -> dict[str, Any]:
    """The slice under the released labels: for what questions the release itself (the review
    queues, the agreement figures), whatever the views' label choice."""
    return {**dict(slice_ or {}), LABELS.name: LABELS.default}


def filters_any(slice_: Mapping[str, Any] | None) -> bool:
    """Whether the slice filters any column (the label choice is no filter)."""
    return any((slice_ or {}).get(c) for c in SLICE_COLUMNS)


def copy_shared(slice_: Mapping[str, Any] | None, drop_empty: bool = False) -> dict[str, Any]:
    """A plain copy of a slice mapping: each column's values a list, the label choice kept as
    its name (left out when it is the released labels, so such a copy is the slice as before)."""
    copied: dict[str, Any] = {}
    for key, value in (slice_ or {}).items():
        if key == LABELS.name:
            if value and value != LABELS.default:
                copied[key] = str(value)
        elif value or not drop_empty:
            copied[key] = list(value or [])
    return copied


def shared_of(params: Any) -> dict[str, Any]:
    """The slice and the label choice a link gives (``params``: ``st.query_params`` or a
    mapping of lists), as the mapping pages pass on: a bad label choice reads as the default."""
    shared: dict[str, Any] = {c: [v for v in values_of(params, c) if v != ""] for c in SLICE_COLUMNS}
    shared[LABELS.name] = LABELS.parse(values_of(params, LABELS.name))[0]
    return shared


# ---------------------------------------------------------------------------- a page's state

Check = Callable[[dict[str, Any], list[str]], None]


@dataclass(frozen=True)
class PageState:
    """A page's declared view state: its path, what it shows, its own fields in URL order, and
    an optional ``check`` of rules across fields (it may change values and add sentences)."""

    path: str
    title: str
    what: str
    # The page's content, ``module:function`` (``auditatlas.views.X_view:page``): a function of
    # (query, link, store root, remember) returning view blocks, which the app draws with its
    # widgets between them and the export draws to a file. Required: a page without a view, so
    # without an export, cannot be declared. By name, imported when a view is shown on its own:
    # the views import what their pages compute.
    view: str
    fields: tuple[Field, ...] = ()
    check: Check | None = None
    notes: str = ""
    # Whether the page wears the badge of the sidebar's slice (labels, simulated corpora): a
    # tour's stops each wear their own, for the slice each stop was saved with.
    badge: bool = True
    _by_name: dict[str, Field] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        module, colon, function = self.view.partition(":")
        if not (module and colon and function.isidentifier()):
            raise ValueError(f"page {self.path}: view {self.view!r} is not 'module:function'")
        names = [f.name for f in self.fields]
        clash = set(names) & SHARED_NAMES or {n for n in names if names.count(n) > 1}
        if clash:
            raise ValueError(f"page {self.path}: parameter(s) {', '.join(sorted(clash))} declared twice")
        self._by_name.update({f.name: f for f in self.fields})

    def __getitem__(self, name: str) -> Field:
        return self._by_name[name]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def view_function(self) -> Callable[..., Any]:
        """The function ``view`` names."""
        import importlib

        module, _, name = self.view.partition(":")
        return getattr(importlib.import_module(module), name)

    @property
    def script(self) -> str:
        """The page's module, by the one naming rule: ``/X`` is ``pages/X.py``, ``/`` the Overview's."""
        return f"pages/{self.path.strip('/') or 'overview'}.py"

    def defaults(self) -> dict[str, Any]:
        return {f.name: (list(f.default) if isinstance(f.default, (list, tuple)) else f.default) for f in self.fields}

    def parse(self, params: Any) -> tuple[dict[str, Any], list[str]]:
        """Typed values for every field and one sentence per value the link gives that the
        page cannot use: a wrong type, out of range, an unknown choice, or a parameter this
        page does not read."""
        values: dict[str, Any] = {}
        problems: list[str] = []
        for f in (*SLICE, LABELS, *self.fields):
            raw = values_of(params, f.name)
            problems.extend(f.shape_problems(raw))
            if f in SLICE:
                continue  # the slice's values are checked against the store by the page
            value, problem = f.parse(raw)
            if f is not LABELS:
                values[f.name] = value
            if problem:
                problems.append(problem)
        known = set(self.names) | SHARED_NAMES | STREAMLIT_PARAMS | APP_PARAMS
        for name in names_in(params):
            if name not in known:
                shown = ", ".join(values_of(params, name))
                problems.append(f"The link's {name} '{shown}' is not a parameter of this page ({self.path}); ignored.")
        if self.check is not None:
            self.check(values, problems)
        return values, problems

    def url(self, slice_: Mapping[str, Iterable[Any]] | None = None, values: Mapping[str, Any] | None = None,
            base: str | None = None) -> str:
        """``base?slice…&labels&field…``: the slice in its column order, the label choice unless
        it is the released labels, then the fields that differ from their defaults in
        declaration order, URL-encoded (a value never ends the URL)."""
        unknown = set(values or {}) - set(self.names)
        if unknown:
            raise KeyError(f"page {self.path} has no parameter {', '.join(sorted(unknown))}")
        items: list[tuple[str, str]] = []
        for col in SLICE_COLUMNS:
            items += [(col, _text(v)) for v in (slice_ or {}).get(col) or []]
        items += LABELS.items(labels_of(slice_))
        for f in self.fields:
            items += f.items((values or {}).get(f.name, f.default))
        query = urlencode(items)
        base = self.path if base is None else base
        return f"{base}?{query}" if query else base


def url(page: PageState, slice_: Mapping[str, Iterable[Any]] | None = None,
        values: Mapping[str, Any] | None = None, base: str | None = None) -> str:
    """The link to ``page`` showing ``values`` inside ``slice_`` (see ``PageState.url``)."""
    return page.url(slice_, values, base)


# What a view of a slice without runs says (the Overview, Propagation).
EMPTY_SLICE = "This slice holds no runs. Widen the filters in the sidebar."


def slice_not_held(unknown: Mapping[str, Sequence[str]]) -> str:
    """One sentence naming each slice value a link asked for that the store does not hold."""
    parts = [f"{column} {', '.join(values)} {'is' if len(values) == 1 else 'are'} not in this store"
             for column, values in unknown.items()]
    return "; ".join(parts) + ". Left out of the slice, so this view shows more than the link asked for."


def not_held(what: str, asked: Any, instead: str) -> str:
    """The sentence for a link value the store (or this view of it) does not hold."""
    return f"The link asks for {what} '{asked}', which this view does not hold here; {instead}."
