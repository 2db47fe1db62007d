"""The review page's Agreement section: kappa between reviewers and against the release, the
confusion table per label process, the released labels' error rate (auditatlas.analyses.review_agreement).

Reviewer names and label processes are shown as text (``st.dataframe`` cells, sentences
through ``components.safe.md``).
"""
from __future__ import annotations

import streamlit as st

from auditatlas.analyses import review_agreement as ra
from components.safe import md


def draw(result: ra.Agreement) -> None:
    st.subheader("Agreement")
    st.caption(md(ra.EXPLAINS))
    for note in result.notes:
        st.info(md(note))
    st.markdown("**Between reviewers**")
    if result.pairs:
        st.dataframe(ra.pairs_frame(result), hide_index=True, width="stretch", key="agreement-pairs")
    else:
        st.caption("Kappa between reviewers needs two reviewers on the same steps.")
    st.markdown("**Review against release, per label process**")
    if result.release:
        st.dataframe(ra.release_frame(result), hide_index=True, width="stretch", key="agreement-release")
        st.caption("Released against reviewed (the latest verdict per step), in steps:")
        st.dataframe(ra.confusion_frame(result), hide_index=True, width="stretch", key="agreement-confusion")
    else:
        st.caption("No verdict on a step with a released label yet.")
    st.markdown("**Released labels' error rate (random order only)**")
    for rate in result.error_rates:
        st.markdown(md(ra.error_sentence(rate)))
    if result.error_rates:
        st.dataframe(ra.error_frame(result), hide_index=True, width="stretch", key="agreement-error")
