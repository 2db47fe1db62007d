"""The review page's Agreement section as a file: kappa between reviewers and against the
release, the confusion table per label process, the released labels' error rate from the random
order (the same analysis as pages/review.py and ``auditatlas reviews agreement``). The queue
itself is a reviewer's working view, not a result, so it is not written."""
from __future__ import annotations

from ...analyses import review_agreement as ra
from ...views.app_link import Link, Query
from ..document import Document


def build(doc: Document, query: Query, link: Link) -> None:
    result = ra.agreement(query, link.slice, int(link.values["seed"]))
    doc.heading("Agreement")
    doc.text(ra.EXPLAINS, "note")
    for note in result.notes:
        doc.text(note, "info")
    doc.heading("Between reviewers", 3)
    if result.pairs:
        doc.table(ra.pairs_frame(result), "agreement-pairs")
    else:
        doc.text("Kappa between reviewers needs two reviewers on the same steps.", "note")
    doc.heading("Review against release, per label process", 3)
    if result.release:
        doc.table(ra.release_frame(result), "agreement-release")
        doc.table(ra.confusion_frame(result), "agreement-confusion",
                  caption="Released against reviewed (the latest verdict per step), in steps")
    else:
        doc.text("No verdict on a step with a released label yet.", "note")
    doc.heading("Released labels' error rate (random order only)", 3)
    for rate in result.error_rates:
        doc.text(ra.error_sentence(rate))
    if result.error_rates:
        doc.table(ra.error_frame(result), "agreement-error-rate")
