"""The user's query text read by tantivy's query parser, and one sentence where it cannot be.

The language is tantivy's (Lucene-like): words, ``"a phrase"``, ``AND`` / ``OR`` / ``NOT`` (or
``+word`` / ``-word``), parentheses, ``field:word`` for the fields of ``fields.SEARCHABLE``.
Words side by side must all match (``conjunction_by_default``): a search box that widens as
one types more words surprises more than one that narrows.

Two adjustments, both keeping every character in its place so the parser's positions stay
the user's: ``AND NOT`` outside quotes is read as ``NOT`` (tantivy reads ``a AND NOT b`` as
``a AND (NOT b)``, a group that matches nothing), and the problem sentence names the character
where reading stopped, with what the user can do about it, never a traceback.
"""
from __future__ import annotations

import re

import tantivy

from ..errors import AtlasError
from . import fields

OPERATORS = ("AND", "OR", "NOT")
_AND_NOT = re.compile(r"\bAND(\s+NOT)\b")
_POSITION = re.compile(r"^(?:Syntax Error: )?(.*?) at position (\d+)$")
_NO_FIELD = re.compile(r"Field does not exist: '(.*)'")


class QueryTextError(AtlasError):
    """A query the engine cannot read; the message is one sentence saying where."""


def parse(index: tantivy.Index, text: str) -> tantivy.Query:
    """``text`` as a tantivy query over the default fields; QueryTextError when it cannot be read."""
    adjusted = outside_quotes(text, lambda part: _AND_NOT.sub(lambda m: "   " + m.group(1), part))
    try:
        return index.parse_query(adjusted, list(fields.DEFAULT_FIELDS), conjunction_by_default=True)
    except ValueError as exc:
        _, errors = index.parse_query_lenient(adjusted, list(fields.DEFAULT_FIELDS))
        raise QueryTextError(problem(text, str(exc), [str(e) for e in errors])) from None


def outside_quotes(text: str, change) -> str:
    """``text`` with ``change`` applied to each part outside double quotes."""
    parts = text.split('"')
    return '"'.join(change(part) if i % 2 == 0 else part for i, part in enumerate(parts))


def problem(text: str, message: str, errors: list[str]) -> str:
    """One sentence for a query the parser refused (``message``, and the lenient parser's ``errors``)."""
    quote = unclosed_quote(text)
    if quote is not None:
        return f"The query cannot be read at character {quote + 1}: the quote opened there is never closed; close it or remove it."
    for error in errors:
        missing = _NO_FIELD.search(error)
        if missing:
            name = missing.group(1)
            where = text.find(f"{name}:")
            return (f"The query cannot be read at character {where + 1}: there is no field '{name}'; "
                    f"the fields are {', '.join(fields.SEARCHABLE)} (or put '{name}:' in quotes to look for it as written).")
    if "Only excluding terms" in message:
        return "The query only excludes (NOT or -): add a word or phrase to look for."
    for error in errors:
        located = _POSITION.match(error)
        if located:
            return _at(int(located.group(2)), located.group(1))
    dangling = dangling_operator(text)
    if dangling is not None:
        start, word = dangling
        return (f"The query cannot be read at character {start + 1}: {word} needs a word or phrase "
                f"{'after' if word == 'NOT' else 'on each side'} (put it in quotes to look for the word itself).")
    return f"The query cannot be read ({message}); put words in quotes to look for them as written."


_WHAT = {
    "expected ')'": "a parenthesis opened before is not closed",
    "unparsed end of query": "the query language does not read what starts there (a ')' without its '(', a '^' or ':' "
                             "without a value?)",
    "expected word": "a field name needs a word or phrase after its colon",
}


def _at(position: int, what: str) -> str:
    reason = _WHAT.get(what, what)
    return f"The query cannot be read at character {position + 1}: {reason}; put words in quotes to look for them as written."


def unclosed_quote(text: str) -> int | None:
    """The index of a double quote that is never closed, or None."""
    quotes = [i for i, ch in enumerate(text) if ch == '"']
    return quotes[-1] if len(quotes) % 2 else None


def dangling_operator(text: str) -> tuple[int, str] | None:
    """The first AND / OR / NOT (outside quotes) without a term where it needs one."""
    masked = outside_quotes(text, lambda part: part)  # quotes kept; mask their insides below
    masked = re.sub(r'"[^"]*"', lambda m: "x" * len(m.group(0)), masked)
    words = [(m.start(), m.group(0)) for m in re.finditer(r"[^\s()]+", masked)]
    for i, (start, word) in enumerate(words):
        if word not in OPERATORS:
            continue
        before = words[i - 1][1] if i else None
        after = words[i + 1][1] if i + 1 < len(words) else None
        if after is None or after in ("AND", "OR") or (word != "NOT" and (before is None or before in OPERATORS)):
            return start, word
    return None
