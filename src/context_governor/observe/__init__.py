"""Observing governance: figures read off a report (figures.py), the client's and the
model's views of a request side by side (views.py), and the page that shows them
(page.py, with its static files in ui/), served by the proxy at /ui or written
offline by ``context-governor govern FILE --html OUT.html``."""

from ._figures import Figures, figures, new_compaction
from ._page import FILES, asset, offline_data, offline_page, served_page
from ._views import request_view

__all__ = [
    "FILES",
    "Figures",
    "asset",
    "figures",
    "new_compaction",
    "offline_data",
    "offline_page",
    "request_view",
    "served_page",
]
