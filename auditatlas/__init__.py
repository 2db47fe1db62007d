"""Audit Atlas core library: ingest, store, analyses. Imports no Streamlit."""
__version__ = "0.1.0"
