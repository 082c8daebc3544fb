"""AP Null Explorer: the dashboard script (page registry and shared sidebar only), served by app.py.

AppTest runs this file; ``streamlit run app.py`` serves it with the kernel warmed at server start.
"""

from pathlib import Path

import streamlit as st

from apnull.ui import warmup
from apnull.ui.state import keep_page_params, page

warmup.start()  # no-op under app.py (already warm); run alone, it warms in a background thread

HERE = Path(__file__).parent
PAGES = HERE / "app_pages"  # not "pages/": that name switches on Streamlit's automatic multipage mode

st.set_page_config(page_title="AP Null Explorer", page_icon=":material/query_stats:", layout="wide")

pages = {
    "": [page(PAGES / "home.py", title="Start here", icon=":material/home:", default=True)],
    "Null distributions": [
        page(PAGES / "densities.py", title="Null densities", icon=":material/area_chart:",
             url_path="densities"),
        page(PAGES / "quantiles.py", title="Quantiles vs size", icon=":material/show_chart:",
             url_path="quantiles"),
        page(PAGES / "lookup.py", title="Threshold lookup", icon=":material/search:", url_path="lookup"),
        page(PAGES / "binning.py", title="Binning n", icon=":material/view_week:", url_path="binning"),
        page(PAGES / "hypergeometric.py", title="Hypergeometric check", icon=":material/casino:",
             url_path="hypergeometric"),
    ],
    "Metrics": [
        page(PAGES / "ranking.py", title="Ranking editor", icon=":material/format_list_numbered:",
             url_path="ranking"),
        page(PAGES / "sampled.py", title="Sampled metrics", icon=":material/filter_alt:", url_path="sampled"),
    ],
    "Your data": [
        page(PAGES / "score.py", title="Score your data", icon=":material/upload_file:", url_path="score"),
        page(PAGES / "compare.py", title="Compare two pipelines", icon=":material/compare_arrows:",
             url_path="compare"),
    ],
}

nav = st.navigation(pages)
keep_page_params(nav.url_path)  # a page opens with its own URL parameters only (issue 9, item 1)

with st.sidebar:
    st.caption(
        "**AP Null Explorer** shows what Average Precision and Precision@R look like when a ranking "
        "is random, so a score can be judged against chance. Every input is kept in the URL: copy "
        "the address to share exactly this view."
    )

nav.run()
