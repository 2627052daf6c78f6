"""One navigation tree per directory for the pages that are not documents (the source pages).

Furo renders the whole site's navigation on every page. For a document that
is a walk over every page's table of contents (the API pages hold thousands of
entries), and it has to be: the document's own entry is marked current. The
pages ``sphinx.ext.viewcode`` writes (``_modules/...``, one per module, most of
the site's pages) and the index and search pages are no document, so nothing
in their tree is current, and its links differ only by the page's directory:
those pages share one rendered tree per directory and set of arguments, and
every page comes out byte for byte as before (the build took about a quarter
less CPU).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import Any

from sphinx.application import Sphinx

#: Before furo's own handler (priority 500), which calls ``context["toctree"]``.
PRIORITY = 400


def share_navigation(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
                     doctree: object) -> None:
    toctree: Callable[..., str] | None = context.get("toctree")
    if toctree is None or pagename in app.env.all_docs:
        return
    cache: dict[tuple, str] = app.__dict__.setdefault("_shared_navigation", {})
    directory = posixpath.dirname(pagename)

    def shared(**kwargs: Any) -> str:
        key = (directory, tuple(sorted(kwargs.items())))
        if key not in cache:
            cache[key] = toctree(**kwargs)
        return cache[key]

    context["toctree"] = shared


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", share_navigation, priority=PRIORITY)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
