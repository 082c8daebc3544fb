"""Landing page: what the explorer is for, and where each question is answered."""

import streamlit as st

from apnull import expected_ap, null_distribution, threshold
from apnull.ui import intro

intro(
    "AP Null Explorer",
    "You ranked **m** positives (say, the other replicates of a treatment) and **n** negatives "
    "(controls) by similarity and got an Average Precision (AP). Is it better than chance? Comparing it "
    "with m/(m+n) is wrong twice. First, a random ranking's AP is higher than that on average. "
    "Second, at small m and n it varies a lot. The fair yardstick is the AP of rankings put in a random "
    "order, the **null distribution**: the score only 5% of them beat is a threshold, and the share of "
    "them that reach your AP is its p-value. This explorer computes it exactly where that is possible "
    "and by shuffling many rankings (Monte Carlo) where it is not.",
)

with st.container(border=True):
    # the first thing a scientist with a screen needs: one primary action, before the teaching material
    action, text = st.columns([1, 4], vertical_alignment="center")
    if action.button("Score your data", type="primary", icon=":material/upload_file:", key="home_score"):
        st.switch_page("app_pages/score.py")
    text.markdown("**Have a screen of profiles?** Upload it (or try the bundled example) and see which "
                  "perturbations beat chance, with p-values you can trust for each one's mean AP. Or learn "
                  "how chance scores look below.",
                  help="Calibrated mAP p-values: the mean Average Precision (mAP) of a perturbation's "
                       "replicates is compared with the mAPs of the same screen with its labels shuffled "
                       "(a permutation test), so at a level of 0.05 about 5% of inactive perturbations pass.")

m, n = 4, 30
c1, c2, c3 = st.columns(3)
c1.metric("the naive baseline m/(m+n), m = 4, n = 30", f"{m / (m + n):.3f}",
          help="The share of positives among the items: the average Precision@R of a random ranking, not "
               "its average AP.")
c2.metric("average AP of a random ranking", f"{expected_ap(m, n):.3f}",
          help="The exact null mean E[AP] = p + (1 − p)(H_N − 1)/(N − 1), with N = m + n, p = m/N and H_N "
               "the N-th harmonic number.")
c3.metric("AP that only 5% of random rankings beat", f"{threshold(m, n, q=0.95):.3f}",
          help="The 95% null threshold: the 95th percentile (quantile q = 0.95) of the null distribution of "
               "AP, from all C(34, 4) placements of the positives.")
beats = null_distribution(m, n).pvalue(m / (m + n) + 1e-12)
st.caption(f"With 4 positives among 34 items, {beats:.0%} of random rankings score above the naive m/(m+n) "
           f"baseline, and 1 random ranking in 20 scores at least {threshold(m, n, q=0.95):.3f}.")

st.subheader("Where to go")
links = [
    ("densities", "Null densities", ":material/area_chart:",
     "How the chance scores of AP and Precision@R narrow as m and n grow."),
    ("quantiles", "Quantiles vs size", ":material/show_chart:",
     "Thresholds (75%, 90%, 95%) and the exact average AP against M/(M+N)."),
    ("lookup", "Threshold lookup", ":material/search:", "Your m, n and level in; thresholds and p-values out."),
    ("binning", "Binning n", ":material/view_week:", "Share one null among nearby n, and what that costs."),
    ("hypergeometric", "Hypergeometric check", ":material/casino:",
     "Precision@K of shuffled labels against its exact law, by brute force."),
    ("ranking", "Ranking editor", ":material/format_list_numbered:",
     "Edit a ranking and watch precision, recall, the PR curve and AP move."),
    ("sampled", "Sampled metrics", ":material/filter_alt:",
     "What AP, NDCG and Recall@k measure when items are sampled (Rendle)."),
    ("score", "Score your data", ":material/upload_file:",
     "Upload your profiles: which perturbations beat chance, and by how much."),
    ("compare", "Compare two pipelines", ":material/compare_arrows:",
     "Two feature tables of the same wells: which retrieves replicates better, and is it real?"),
]
# two cards a row on a wide screen, one a row on a phone (Streamlit stacks columns below 640 px); the
# description is a caption under the link, so it wraps instead of being cut at the link's one line
for row in range(0, len(links), 2):
    for col, (path, title, icon, text) in zip(st.columns(2), links[row:row + 2]):
        with col.container(border=True):
            st.page_link(f"app_pages/{path}.py", label=f"**{title}**", icon=icon)
            st.caption(text)
