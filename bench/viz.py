"""Benchmark: kg viz on the 4,870 ICLR+ICML 2024 abstracts.

    .venv/bin/python bench/viz.py [--corpora ../shared/corpora] [--workers 2]
                                  [--max-entities N] [--graph extraction.jsonl] [-o out.html]

Builds the corpus with kg.pipeline.run (or reads --graph), then writes the default page (the
technique map at this size; --view graph for papers and entities) and prints: seconds to
write the HTML (target < 3 s), file size (target < 10 MB), the first render in headless Chromium —
navigation start to the first frame with labels placed (target < 2 s) — the redraw after a
pan, timed inside the page (target < 100 ms), plus console errors and network requests seen.
One run; figures, not assertions (exit 1 only if a target is missed).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ("ICLR_cc_2024_Conference.tsv", "ICML_cc_2024_Conference.tsv")
sys.path.insert(0, str(ROOT / "tests"))  # the CDP helper the browser tests use


def main() -> int:
    from kg.pipeline import load_corpus, run
    from kg.viz import DEFAULT_MAX_ENTITIES, write_viz

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-entities", type=int, default=DEFAULT_MAX_ENTITIES)
    parser.add_argument("--graph", type=Path, default=None,
                        help="An extraction JSONL (kg extract --format jsonl) to skip extraction.")
    parser.add_argument("-o", "--output", type=Path, default=None)
    parser.add_argument("--view", choices=("auto", "map", "graph"), default="auto")
    args = parser.parse_args()

    t0 = time.perf_counter()
    if args.graph:
        corpus = load_corpus([args.graph])
        print(f"corpus: {len(corpus)} papers read from {args.graph} "
              f"in {time.perf_counter() - t0:.1f} s")
    else:
        paths = [args.corpora / "openreview-2024" / name for name in FILES]
        corpus = run(paths, workers=args.workers)
        print(f"corpus: {len(corpus)} papers, {len(corpus.entities)} entities "
              f"(pipeline.run, {args.workers} workers: {time.perf_counter() - t0:.1f} s)")

    output = args.output or Path(tempfile.mkdtemp(prefix="kg-viz-bench-")) / "graph.html"
    t0 = time.perf_counter()
    summary = write_viz(corpus, output, max_entities=args.max_entities, view=args.view)
    write_s = time.perf_counter() - t0
    size_mb = summary.bytes / 1e6
    print(f"html:   {output}")
    print(f"        {summary.nodes} nodes ({summary.papers} papers, {summary.entities} entities), "
          f"{summary.edges} edges")
    if summary.notice:
        print(f"        notice: {summary.notice}")
    print(f"write:  {write_s:6.2f} s   (target < 3 s)")
    print(f"size:   {size_mb:6.2f} MB  (target < 10 MB)")

    ok = size_mb < 10 and write_s < 3
    from browser import Browser, find_chromium

    if find_chromium() is None:
        print("render: skipped — chromium not installed (apt-get install -y chromium)")
        return 0 if ok else 1
    with Browser.launch() as browser:
        t0 = time.perf_counter()
        page = browser.open(output.as_uri(), timeout=120)
        page.wait_for("window.kgViz && window.kgViz.ready", timeout=120)
        render_s = time.perf_counter() - t0
        script_ms = page.evaluate("kgViz.firstDrawMs")
        # Pan (drag the canvas) and time the redraw, to show the page stays interactive.
        pan_ms = page.evaluate("""new Promise(done => {
            const net = kgViz.network, p = net.getViewPosition(), t = performance.now();
            net.once('afterDrawing', () => done(performance.now() - t));
            net.moveTo({position: {x: p.x + 200, y: p.y + 150}, animation: false});
            net.redraw();
        })""")
        browser.pump(0.3)
        print(f"render: {render_s:6.2f} s   (target < 2 s; navigation → first frame; page script "
              f"→ first frame {script_ms / 1000:.2f} s)")
        print(f"pan:    {pan_ms:6.0f} ms  (target < 100 ms; one redraw after moving the view)")
        print(f"page:   {len(page.errors())} console errors; requests: {page.requests}")
        ok = (ok and render_s < 2 and pan_ms < 100 and not page.errors()
              and page.requests == [output.as_uri()])
    print("all targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
