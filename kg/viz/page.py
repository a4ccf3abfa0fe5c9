"""One offline HTML page: a template from kg/viz/templates with everything inlined.

vis-network comes from the copy pyvis ships; the page's own script and styles from the
templates folder beside this module; the data as JSON safe inside a ``<script>`` element.
Both pages (the graph and the map) are put together here, by jinja2 (pyvis's own template
engine): the pages read their nodes, edges and options from the payload, none from pyvis's
template variables, so pyvis's ``Network`` would only pass our six values through (and cost
0.05-0.07 s more to import than jinja2 alone, with its IPython parts).

>>> script_json({"title": "<b>&</b>"})
'{"title":"\\\\u003cb\\\\u003e\\\\u0026\\\\u003c/b\\\\u003e"}'
"""

from __future__ import annotations

import html as html_lib
import importlib.util
import json
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates"


def script_json(data: object) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` characters."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def inline_safe(code: str, what: str) -> str:
    """``code`` unchanged, or RuntimeError when a closing tag in it would end its element."""
    if "</script" in code.lower() or "</style" in code.lower():
        raise RuntimeError(f"{what} contains a closing tag and cannot be inlined")
    return code


def template_text(name: str) -> str:
    """A file of the templates folder as text."""
    return (TEMPLATES / name).read_text(encoding="utf-8")


def app_script(name: str) -> str:
    """A page's script as inlined: the shared DOM helper (dom.js), then ``name``."""
    return inline_safe("\n".join(template_text(f) for f in ("dom.js", name)), name)


def vis_assets() -> tuple[str, str]:
    """vis-network's JS and CSS from the copy the installed pyvis ships (no CDN, no vendoring)."""
    spec = importlib.util.find_spec("pyvis")  # (where it is installed: importing it is slow)
    if spec is None or spec.origin is None:
        raise RuntimeError("pyvis is not installed; reinstall kg (pip install -e .)")
    base = Path(spec.origin).resolve().parent
    for lib in (base / "templates" / "lib" / "vis-9.1.2", base / "lib" / "vis-9.1.2"):
        if (lib / "vis-network.min.js").is_file():
            return ((lib / "vis-network.min.js").read_text(encoding="utf-8"),
                    (lib / "vis-network.css").read_text(encoding="utf-8"))
    raise RuntimeError(f"pyvis at {base} ships no vis-network 9.1.2; reinstall pyvis>=0.3.2")


def render_page(template: str, title: str, script: str, styles: tuple[str, ...],
                payload: dict) -> str:
    """``template`` (viz.html or map.html) rendered with the title, vis-network, ``script``
    after dom.js, the ``styles`` in order, and ``payload`` as JSON."""
    from jinja2 import Environment, FileSystemLoader  # (on use: `kg viz --help` stays light)

    vis_js, vis_css = vis_assets()
    css = "".join(template_text(name) for name in styles)
    page = Environment(loader=FileSystemLoader(str(TEMPLATES))).get_template(template)
    return page.render(
        page_title=html_lib.escape(f"kg — {title}"),
        vis_js=inline_safe(vis_js, "vis-network.min.js"),
        vis_css=inline_safe(vis_css, "vis-network.css"),
        app_js=app_script(script),
        app_css=inline_safe(css, styles[-1]),
        payload=script_json(payload),
    )
