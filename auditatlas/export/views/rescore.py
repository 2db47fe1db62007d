"""The Re-score page's results as a file: the slice's steps per corpus by label (what a re-score
can fit on), why a corpus cannot be scored, and the re-scored prediction sets on the slice's
corpora with their test ROC-AUC (pages/rescore.py). Running a re-score or a cross-backbone matrix
is an action of the author's session, not a view of the store, so the file says so and carries
the detectors and seeds the link chose."""
from __future__ import annotations

from ...detectors import engine
from ...view_state.state_fields import describe_slice
from ...views import labels_of
from ...views.app_link import Link, Query
from ..document import Document


def build(doc: Document, query: Query, link: Link) -> None:
    slice_, values = link.slice, link.values
    doc.text(f"Slice: {describe_slice(slice_)}.")
    counts = query("step_label_counts", {"slice": slice_})
    _scorable, notes = engine.scorable_corpora(counts.to_dict(orient="records"))
    if not counts.empty:
        doc.table(counts, "rescore-label-counts", caption="Steps of the slice per corpus, by label.")
    for note in notes:
        doc.text(note, "info")
    doc.heading("Run a re-score")
    doc.text(f"The link chooses detectors {', '.join(values['rescore_detectors']) or 'none'} on feature set "
             f"{values['rescore_feature_set']}, seeds 0..{int(values['rescore_seeds']) - 1}. A re-score runs in the "
             "app (it writes new prediction sets into the store); this file shows what the store holds.", "note")
    doc.heading("Re-scored prediction sets")
    sets = query("rescore_sets", {"corpora": sorted(set(counts["corpus"])) if not counts.empty else [],
                                  "labels": labels_of(slice_)})
    if sets.empty:
        doc.text("No re-scored prediction set on the slice's corpora yet.", "note")
    else:
        doc.table(sets.drop(columns=["params", "slice"]), "rescore-sets",
                  caption=f"{len(sets)} re-scored set(s) on the slice's corpora, newest first. test_roc_auc: over each "
                          "set's labeled test steps (blank: one class only, undefined).")
    doc.heading("Cross-backbone robustness")
    doc.text(f"The matrix is computed in the app on request (detectors {', '.join(values['cross_detectors']) or 'none'}, "
             f"{int(values['cross_seeds'])} seed(s)); it is not kept in the store, so the file does not hold it.", "note")
