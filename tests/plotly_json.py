"""Read figures that AppTest captured: plotly JSON, with arrays possibly in plotly's binary form."""

import base64
import json

import numpy as np


def decode(value):
    """A plotly array (list, or {"dtype", "bdata"[, "shape"]}) as a numpy array."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if "shape" in value:
            arr = arr.reshape([int(s) for s in str(value["shape"]).split(",")])
        return arr
    return np.asarray(value)


def figures(at):
    """The JSON of every plotly chart on an AppTest page, in order."""
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def trace(fig: dict, name: str) -> dict:
    """The trace named ``name``."""
    return next(t for t in fig["data"] if t.get("name") == name)
