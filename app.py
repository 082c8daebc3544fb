"""AP Null Explorer: the server entry point. ``streamlit run app.py`` serves the dashboard (dashboard.py).

Streamlit runs an ``st.App`` found here as an ASGI app. Its lifespan warms the Monte Carlo kernel
(numba's import and cached machine code), the figure modules and the views a visitor sees first, once,
when the server starts and before it accepts the first visitor (about 1 s), so the first page does not
pay for them (see apnull.ui.warmup). The dashboard itself, the page registry and the sidebar, is
dashboard.py.
"""

import asyncio
from contextlib import asynccontextmanager

import streamlit as st


@asynccontextmanager
async def lifespan(_app):
    from apnull.ui import warmup

    warmup.start()
    await asyncio.to_thread(warmup.wait, 60)  # bounded: a failed warm-up only means a slower first page
    warmup.freeze_heap()  # what the warm-up loaded lives as long as the server: full collections skip it
    yield


app = st.App("dashboard.py", lifespan=lifespan)
