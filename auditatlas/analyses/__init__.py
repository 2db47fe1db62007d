"""The analysis layer: boards, run detection, propagation, detector comparison, rates.

Every analysis reads the store only through the query layer (``queries/``) and imports no
Streamlit, so the app, the CLI, tests and benchmarks compute the same numbers.
"""
