"""The label choice: which label process every query reads (``labels=released|reviewed|agreed``).

A label choice is one declaration (:data:`CHOICES`): the SQL expression of a step's label from
its released label ``s.label`` and its latest verdict's label ``v.label`` (1 anomaly, 0 normal,
NULL for unsure or no verdict; ``queries/sql/reviewed_labels.sql``), and whether a step of a run
nobody reviewed keeps its released label. Adding a label process is one more entry here, with its
name and meaning in ``auditatlas.schema.LABEL_CHOICES`` (what the views and the README read
without the query layer; the two are checked against each other on import).

How every query follows it without a word of its own: the released labels are the store version's
schema as it is (``queries/views.py``); any other choice gets a schema of its own per store version
(``store_vN__reviewed``, made on first use, dropped with the version), where ``steps`` and ``runs``
are the chosen labels and every other name reads the version's. So the Overview, the boards, the
detector views, re-scoring and propagation read one name, ``steps``, whatever the choice; no query
text names a label process. The derived tables that carry labels (``LABELED_DERIVED``) are their
live queries there: their stored files and ranks hold the released labels.

Chain roles (``auditatlas/chains.py``) are computed from labels, and the store writer stores them
for the released labels. For another choice they are recomputed here, by that same function
(never a second copy of the rule), over the steps of the runs that hold a verdict: a run with no
verdict keeps its stored roles when its steps keep their released labels, and has none when
they lose them (under ``agreed`` only reviewed steps carry a label). Why this and not a SQL
version of the rule shared with ingest: the writer applies the rule in Arrow per batch for
memory reasons (see ``chains.chain_columns``), and a verdicts table holds hundreds or thousands
of rows, so the runs to recompute are few and the Arrow function takes milliseconds on them.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa

from auditatlas.chains import chain_columns
from auditatlas.schema import DEFAULT_LABELS, LABEL_CHOICES

from .template import text


@dataclass(frozen=True)
class LabelChoice:
    """One label process a view can read.

    ``label``: SQL of a reviewed run's step label, over ``s.label`` (released) and ``v.label``
    (the latest verdict's: 1, 0, or NULL when unsure or not given). ``unreviewed_keep``: a step
    of a run without verdicts keeps its released label (else it is unlabeled)."""

    name: str
    label: str
    unreviewed_keep: bool


CHOICES: dict[str, LabelChoice] = {
    # A verdict replaces the released label where it gives one; unsure leaves the released label.
    "reviewed": LabelChoice("reviewed", "coalesce(v.label, s.label)", unreviewed_keep=True),
    # Only steps whose latest verdict equals the released label keep a label.
    "agreed": LabelChoice("agreed", "CASE WHEN v.label = s.label THEN s.label END", unreviewed_keep=False),
}
assert set(CHOICES) | {DEFAULT_LABELS} == set(LABEL_CHOICES), "every label choice is declared once"

# Derived tables whose rows carry labels: under another choice, their live queries.
LABELED_DERIVED: tuple[str, ...] = ("test_scores", "test_sets", "step_cube", "propagation_cube")


def choice_of(params: Mapping[str, Any] | None) -> str:
    """The label choice ``params`` asks for: ``params["labels"]``, else the slice's ``labels``,
    else the released labels. ValueError naming the choices for any other value."""
    params = params or {}
    given = params.get("labels") or (params.get("slice") or {}).get("labels") or DEFAULT_LABELS
    if given not in LABEL_CHOICES:
        raise ValueError(f"labels '{given}' is not one of {', '.join(LABEL_CHOICES)}")
    return str(given)


def without_choice(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """``params`` without the label choice (a query declares its own parameters only)."""
    return {k: v for k, v in (params or {}).items() if k != "labels"}


def schema_name(base: str, choice: str) -> str:
    return base if choice == DEFAULT_LABELS else f"{base}__{choice}"


def build(con: duckdb.DuckDBPyConnection, base: str, choice: str, names: tuple[str, ...]) -> str:
    """Make schema ``base__choice`` on ``con``: ``steps`` and ``runs`` under the choice's labels,
    every other name of ``names`` read from schema ``base``. Returns the schema's name."""
    rule = CHOICES[choice]
    schema = schema_name(base, choice)
    con.execute(f"CREATE SCHEMA {schema}")
    con.execute(f"USE {base}")
    touched = _reviewed_runs(con, rule)
    con.execute(f"USE {schema}")
    con.register("reviewed_runs_arrow", touched)
    try:
        con.execute("CREATE TABLE step_labels AS SELECT * FROM reviewed_runs_arrow")
    finally:
        con.unregister("reviewed_runs_arrow")
    con.execute("CREATE TABLE run_labels AS SELECT run_id, count(*) FILTER (WHERE label = 1) AS anomalous_steps, "
                "coalesce(max(chain_length), 0) AS chain_length FROM step_labels GROUP BY run_id")
    keep = rule.unreviewed_keep
    # Outside the reviewed runs: the stored label and roles, or none (NULL label, no chain).
    outside = {"label": "s.label" if keep else "NULL::TINYINT", "chain_role": "s.chain_role" if keep else "NULL::VARCHAR",
               "chain_length": "s.chain_length" if keep else "0::BIGINT"}
    replaced = ", ".join(f"CASE WHEN o.run_id IS NULL THEN {outside[c]} ELSE o.{c} END AS {c}" for c in outside)
    con.execute(f"CREATE VIEW steps AS SELECT s.* REPLACE ({replaced}, "
                "CASE WHEN o.run_id IS NULL THEN s.failure_mode ELSE o.failure_mode END AS failure_mode) "
                f"FROM {base}.steps s LEFT JOIN step_labels o ON o.run_id = s.run_id AND o.step_idx = s.step_idx")
    runs_outside = {"anomalous_steps": "r.anomalous_steps" if keep else "0::BIGINT",
                    "chain_length": "r.chain_length" if keep else "0::BIGINT"}
    replaced = ", ".join(f"CASE WHEN o.run_id IS NULL THEN {runs_outside[c]} ELSE o.{c} END AS {c}" for c in runs_outside)
    con.execute(f"CREATE VIEW runs AS SELECT r.* REPLACE ({replaced}) "
                f"FROM {base}.runs r LEFT JOIN run_labels o ON o.run_id = r.run_id")
    for name in names:
        if name in ("steps", "runs"):
            continue
        if name in LABELED_DERIVED:
            # Views bind to their own schema (DuckDB): this one reads the chosen steps.
            con.execute(f"CREATE VIEW {name} AS {text(name)}")
        else:
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM {base}.{name}")
    return schema


def _reviewed_runs(con: duckdb.DuckDBPyConnection, rule: LabelChoice) -> pa.Table:
    """Every step of every run holding a verdict, with its label under ``rule`` and its chain
    role and length recomputed from those labels (``auditatlas.chains``, the writer's rule)."""
    steps = con.sql(f"""
        WITH v AS (SELECT run_id, step_idx, label, failure_mode FROM ({text('reviewed_labels')}) WHERE NOT orphaned),
        reviewed AS (SELECT DISTINCT run_id FROM v)
        SELECT s.run_id, s.step_idx, s.scope,
               CAST({rule.label} AS TINYINT) AS label,
               CASE WHEN {rule.label} = 1 THEN coalesce(v.failure_mode, s.failure_mode)
                    ELSE s.failure_mode END AS failure_mode
        FROM steps s JOIN reviewed USING (run_id) LEFT JOIN v USING (run_id, step_idx)
        ORDER BY s.run_id, s.step_idx
    """).to_arrow_table()
    role, length = chain_columns(steps)
    return steps.append_column("chain_role", role).append_column("chain_length", length)
