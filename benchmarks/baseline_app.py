"""Baseline for benchmarks/page_load.py: the cheapest page the dashboard could be.

One number input (bound to the URL like the dashboard's inputs) and one plotly line chart of a
few hundred points. Whatever the real app costs above this is ours, not Streamlit's or Plotly's.

    streamlit run benchmarks/baseline_app.py
"""

import math

import plotly.graph_objects as go
import streamlit as st

st.title("Baseline")
freq = st.number_input(
    "Frequency", min_value=1, max_value=20, value=3, step=1, key="freq", bind="query-params"
)
x = [i / 300 for i in range(301)]
y = [math.sin(2 * math.pi * freq * v) for v in x]
fig = go.Figure(go.Scatter(x=x, y=y, mode="lines", hovertemplate="x=%{x:.4f}<br>y=%{y:.4f}"))
fig.update_layout(xaxis_title="x", yaxis_title="sin(2π f x)", height=400)
st.plotly_chart(fig)
