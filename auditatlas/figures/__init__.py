"""Pure figure and table builders: the same drawing for the app's pages and the offline export.

No Streamlit here. A page hands a figure to ``st.plotly_chart`` (or a trace-graph page to an
iframe); the export (``auditatlas.export``) writes the same figure into one HTML file. Every
name from the store is escaped by the builder (``text.plotly``), so both show it as text.
"""
