"""A reference of bench/pages.py: what Streamlit, Chromium and plotly.js alone cost for a page
that opens on a chart (a title and one 7 x 11 plotly heatmap with its values, the size of a
backbone's AUROC grid). Streamlit loads its plotly.js module (4.7 MB) on a tab's first chart."""
import numpy as np
import plotly.graph_objects as go
import streamlit as st

st.title("Bare chart page")
z = np.random.default_rng(0).random((7, 11)).round(2)
st.plotly_chart(go.Figure(go.Heatmap(z=z, text=z, texttemplate="%{text}", colorscale="RdYlGn")),
                config={"displayModeBar": False})
