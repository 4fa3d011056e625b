"""Observing governance: figures read off a report (figures.py), the client's and the
model's views of a request side by side (views.py), and the page that shows them
(page.py, with its static files in ui/), served by the proxy at /ui or written
offline by ``context-governor govern FILE --html OUT.html``."""

__all__: list[str] = []
