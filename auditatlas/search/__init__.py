"""Ranked full-text search over every step, on tantivy.

Why tantivy: DuckDB's full-text extension has no build for DuckDB 2.0, and a hand-written
BM25 with phrases and boolean queries is what a maintained engine already does (tantivy is a
Lucene-class engine in Rust with maintained Python bindings: BM25, phrase, AND/OR/NOT, field
queries, snippets, memory-mapped segments).

``fields``  what the index holds per step (searchable fields, slice and label filters)
``index``   the index of one store version on disk: key, build into scratch, open, sweep
``parse``   the user's text read by tantivy's parser; one sentence where it cannot be
``answer``  one search: ranked page of hits with snippets, or the text scan when no index

No Streamlit and no store reads here: the query layer streams the step rows for a build
(``queries/search.py``) and the scan is a named query handed in.

The package imports none of these modules (the search itself comes from ``answer``): the query
layer's ``index`` then comes without the ``answer`` above it, and the command line's parser reads
the names below without loading tantivy.
"""

# What a search request may say, declared here (a light module) for the page's link and the CLI.
LABEL_CHOICES = ("any", "anomaly", "normal", "unlabeled")
PAGE_SIZE = 20
