"""QA-set doc ids and chunker names are text in every Plotly label (issue 39, lower findings): plotly.js reads
labels, ticks and hover texts as pseudo-HTML, so an uploaded set's doc id `<a href=...>` became a link in the
app's charts and in the question report."""

from __future__ import annotations

import json

from core.evaluation.collisions import GridRow
from core.outputs.figures import collision_grid, collision_heatmap

LINK = '<a href="http://127.0.0.1:9/x">click</a>'
STYLED = '<span style="font-size:90px">big</span>'


def _labels(fig) -> str:
    return json.dumps(fig.to_plotly_json()["data"])


def test_the_where_from_grid_shows_doc_ids_as_text():
    fig = collision_grid([GridRow(f"chop{STYLED}", [LINK, "fan"], [True, False], 0.5)])
    labels = _labels(fig)
    assert "<a href" not in labels and "<span" not in labels
    assert "&lt;a href=\\\"http://127.0.0.1:9/x\\\"&gt;click&lt;/a&gt;" in labels


def test_the_collision_heatmap_shows_doc_ids_and_chunker_names_as_text():
    fig = collision_heatmap([f"recursive{STYLED}"], [LINK, "fan"], [[0.5, None]])
    labels = _labels(fig)
    assert "<a href" not in labels and "<span" not in labels
    assert list(fig.data[0].x)[0].startswith("&lt;a href=") and fig.data[0].y[0].startswith("recursive&lt;span")
