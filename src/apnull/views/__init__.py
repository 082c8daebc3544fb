"""Data of each dashboard page: no streamlit, no plotly."""
