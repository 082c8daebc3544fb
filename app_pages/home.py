"""Landing page: what the explorer is for, and where each question is answered."""

import streamlit as st

from apnull import expected_ap, null_distribution, threshold
from apnull.ui import intro

intro(
    "AP Null Explorer",
    "You ranked **m** positives (say, the other replicates of a treatment) and **n** negatives "
    "(controls) by similarity and got an Average Precision. Is it better than chance? Comparing it "
    "with m/(m+n) is wrong twice. First, a random ranking's AP is higher than that on average. "
    "Second, at small m and n it varies a lot. The fair yardstick is the **null distribution**: the AP "
    "of a randomly ordered ranking. Its upper quantiles are thresholds and its tail gives p-values. "
    "This explorer computes it exactly where that is possible and by fast Monte Carlo where it is not.",
)

with st.container(border=True):
    # the first thing a scientist with a screen needs: one primary action, before the teaching material
    action, text = st.columns([1, 4], vertical_alignment="center")
    if action.button("Score your data", type="primary", icon=":material/upload_file:", key="home_score"):
        st.switch_page("app_pages/score.py")
    text.markdown("**Have a screen of profiles?** Upload it (or try the bundled example) and see which "
                "perturbations beat chance, with calibrated mAP p-values. Or learn how the null works below.")

m, n = 4, 30
c1, c2, c3 = st.columns(3)
c1.metric("m / (m + n) for m = 4, n = 30", f"{m / (m + n):.3f}")
c2.metric("exact null mean of AP", f"{expected_ap(m, n):.3f}")
c3.metric("95% null threshold of AP", f"{threshold(m, n, q=0.95):.3f}")
beats = null_distribution(m, n).pvalue(m / (m + n) + 1e-12)
st.caption(f"With 4 positives among 34 items, {beats:.0%} of random rankings score above the naive m/(m+n) "
           f"baseline, and 1 random ranking in 20 scores at least {threshold(m, n, q=0.95):.3f}.")

st.subheader("Where to go")
links = [
    ("densities", "Null densities", "How the null law of AP and Precision@R narrows as m and n grow."),
    ("quantiles", "Quantiles vs size", "Thresholds (75/90/95%) and the exact mean against M/(M+N)."),
    ("lookup", "Threshold lookup", "Your m, n and level in; thresholds and p-values out."),
    ("binning", "Binning n", "Share one null among nearby n, and what that costs."),
    ("hypergeometric", "Hypergeometric check", "Precision@K of shuffled labels against its exact law."),
    ("ranking", "Ranking editor", "Edit a ranking and watch precision, recall, the PR curve and AP move."),
    ("sampled", "Sampled metrics", "What AP, NDCG and Recall@k measure when items are sampled (Rendle)."),
    ("score", "Score your data", "Upload your profiles: which perturbations beat chance (calibrated mAP p-values)."),
]
for path, title, text in links:
    st.page_link(f"app_pages/{path}.py", label=f"**{title}**: {text}")
