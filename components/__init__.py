"""Reusable Streamlit widgets. Components draw; they never query the store themselves
(``cached`` is the one bridge: the Streamlit cache in front of the named queries)."""
