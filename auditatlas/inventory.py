"""What the store holds, per corpus (the `info` command and the Overview)."""
from __future__ import annotations

from pathlib import Path

COUNT_KEYS = (
    "runs", "steps", "labeled_steps", "anomalous_steps", "edges", "prediction_sets",
    "predictions", "configs", "capabilities", "excess_capabilities",
)


def corpus_counts(root: str | Path | None = None) -> dict[str, dict[str, int]]:
    """``{corpus: {count name: int}}`` for every corpus with any row in the store."""
    import queries

    frame = queries.run("corpus_counts", root=root)
    return {
        row["corpus"]: {key: int(row[key]) for key in COUNT_KEYS}
        for row in frame.to_dict(orient="records")
    }
