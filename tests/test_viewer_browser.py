"""`dialogue-gym view` pages in a real headless Chromium (the system's, driven by Playwright).

The page loads from a file:// URL without console errors or any request, its filters change the
visible list, dialogues open (a hostile one runs no script), every registered id renders, and a run of
10,000 dialogues stays responsive. Screenshots are kept under the test's tmp_path and, when
``DIALOGUE_GYM_ARTEFACTS`` names a folder, copied there with the 10,000-dialogue timings.

Needs ``pip install playwright`` (never ``playwright install``: the system Chromium is used) and
``apt-get install chromium``; skipped, saying which is missing, without them. ``DIALOGUE_GYM_CHROMIUM``
names another Chromium binary.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from dialogue_gym.viewer import page_data, write_view
from envs_registry import REGISTRY
from viewer_runs import hostile_record, play, training_folder

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    sync_playwright = None

CHROMIUM = os.environ.get("DIALOGUE_GYM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
LAUNCH_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
pytestmark = [
    pytest.mark.skipif(sync_playwright is None, reason="needs Playwright's Python package (pip install playwright; no `playwright install`)"),
    pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium on PATH (apt-get install -y chromium chromium-driver) or DIALOGUE_GYM_CHROMIUM"),
]


def keep(path: Path) -> None:
    """Copy a test artefact to $DIALOGUE_GYM_ARTEFACTS when it is set."""
    folder = os.environ.get("DIALOGUE_GYM_ARTEFACTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(folder) / path.name)


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield chromium
        chromium.close()


class Opened:
    """A page of the viewer with what it logged: console errors, uncaught errors, dialogs, requests."""

    def __init__(self, browser, html: Path, width: int = 1400, height: int = 1000):
        self.errors, self.dialogs, self.requests = [], [], []
        self.page = browser.new_page(viewport={"width": width, "height": height})
        self.page.on("console", lambda message: message.type == "error" and self.errors.append(message.text))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.url = html.resolve().as_uri()
        clock = time.perf_counter()
        self.page.goto(self.url)
        self.page.wait_for_selector("body[data-ready='1']", state="attached", timeout=60_000)
        self.seconds = time.perf_counter() - clock

    def items(self) -> list[str]:
        return self.page.locator("#dg-list li").all_inner_texts()

    def range(self) -> str:
        return self.page.inner_text("#dg-range")

    def wait_range(self, text: str) -> None:
        self.page.wait_for_function("t => document.getElementById('dg-range').textContent === t", arg=text, timeout=10_000)

    def check_clean(self) -> None:
        assert self.errors == [] and self.dialogs == [] and self.requests == [self.url]


def test_filters_open_and_screenshot(browser, tmp_path):
    run = tmp_path / "run.jsonl"
    play("SEAD-Outbound-v0", run, ["sop", "random"], episodes=6)
    with open(run, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(hostile_record()) + "\n")
    html, count = write_view(run)
    rows = page_data(json.loads(line) for line in run.read_text().splitlines())["rows"]
    view = Opened(browser, html)
    assert count == 13 and len(view.items()) == 13 and view.range() == "1\u201313 of 13"
    assert view.page.locator("#dg-summary svg").count() >= 2  # outcome counts and reward distribution

    view.page.select_option("#dg-filter-agent", "random")
    assert view.range() == "1\u20136 of 6" and all("random" in item.split() for item in view.items())
    outcome = rows[6]["outcome"]
    view.page.select_option("#dg-filter-outcome", outcome)
    wanted = sum(row["agent"] == "random" and row["outcome"] == outcome for row in rows)
    assert len(view.items()) == wanted and all(outcome in item for item in view.items())
    view.page.select_option("#dg-filter-agent", "")
    view.page.select_option("#dg-filter-outcome", "")
    low, high = sorted({row["start"] for row in rows})[:2]
    view.page.fill("#dg-filter-start", f"{low}-{high}")
    wanted = sum(low <= row["start"] <= high for row in rows)
    assert 0 < wanted < 13 and len(view.items()) == wanted
    view.page.fill("#dg-filter-start", "zz")
    assert "bad" in view.page.get_attribute("#dg-filter-start", "class") and len(view.items()) == wanted  # kept until valid
    view.page.fill("#dg-filter-start", "")
    view.page.fill("#dg-filter-text", "ONERROR")
    view.wait_range("1\u20131 of 1")
    view.page.fill("#dg-filter-text", '"parsed"')
    view.wait_range("0 of 13")  # the search reads values, not the data's key names
    view.page.fill("#dg-filter-text", "")
    view.wait_range("1\u201313 of 13")
    view.page.check("#dg-filter-flagged")
    assert "#12" in view.items()[-1] and "1 invalid" in view.items()[-1]
    view.page.uncheck("#dg-filter-flagged")

    view.page.click("#dg-list li[data-index='12']")
    detail = view.page.locator("#dg-detail")
    assert detail.locator("h2").inner_text().startswith("Dialogue #12")
    assert "</script><script>alert(1)</script>" in detail.locator(".bubble .text").first.inner_text()
    assert "invalid: missing <trust_score> </script>" in detail.inner_text() and "role reversal: how can I help you" in detail.inner_text()
    assert view.page.evaluate("document.querySelectorAll('img, iframe, object').length") == 0
    assert view.page.evaluate("document.scripts.length") == 2

    view.page.click("#dg-list li[data-index='1']")
    assert detail.locator("svg.state-chart path").count() == 3 and detail.locator(".turn").count() == len(json.loads(run.read_text().splitlines()[1])["turns"])
    chart = detail.locator("svg.state-chart")  # each lane: its name, and value ticks at its lowest and highest value
    assert chart.locator("text").first.text_content() == "cooperation" and chart.locator("text.tick").all_text_contents()[:2] == ["0", "4"]
    view.check_clean()
    shot = tmp_path / "viewer.png"
    view.page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    keep(shot)
    view.page.close()


def test_every_registered_id_in_one_page(browser, tmp_path):
    run = tmp_path / "every_id.jsonl"
    for entry in REGISTRY:
        play(entry.id, run, [entry.agents[0]], episodes=2)
    html, count = write_view(run)
    rows = page_data(json.loads(line) for line in run.read_text().splitlines())["rows"]
    view = Opened(browser, html)
    assert view.page.locator("#dg-filter-env option").count() == len(REGISTRY) + 1
    for entry in REGISTRY:
        view.page.select_option("#dg-filter-env", entry.id)
        assert view.range() == "1\u20132 of 2"
        index = next(i for i, row in enumerate(rows) if row["env"] == entry.id)
        view.page.click(f"#dg-list li[data-index='{index}']")
        detail = view.page.locator("#dg-detail")
        assert detail.locator("h2").inner_text().startswith(f"Dialogue #{index}") and detail.locator(".turn").count() == rows[index]["turns"]
        charts = detail.locator("svg.state-chart").count()
        assert charts == (0 if entry.id.startswith("RLADA") else 1)
        assert detail.locator(".rewards table").count() == 2
    view.check_clean()
    shot = tmp_path / "viewer-every-id.png"
    view.page.screenshot(path=str(shot))
    keep(shot)
    view.page.close()


def test_ten_thousand_dialogues_stay_responsive(browser, tmp_path):
    """Timings are printed (pytest -s) and kept; the bounds are generous (a busy 2-core machine)."""
    small = tmp_path / "small.jsonl"
    play("SEAD-Outbound-v0", small, ["sop", "random", "adaptive", "oracle"], episodes=10)
    records = [json.loads(line) for line in small.read_text().splitlines()]
    run = tmp_path / "big.jsonl"
    with open(run, "w", encoding="utf-8") as handle:
        for k in range(10_000):
            record = records[k % len(records)]
            record["meta"]["start"] = k // 4
            handle.write(json.dumps(record) + "\n")
    clock = time.perf_counter()
    html, count = write_view(run)
    generation = time.perf_counter() - clock
    view = Opened(browser, html)
    ready_ms = int(view.page.get_attribute("body", "data-ready-ms"))
    assert count == 10_000 and view.range() == "1\u201350 of 10000"
    clock = time.perf_counter()
    view.page.select_option("#dg-filter-agent", "random")
    view.wait_range("1\u201350 of 2500")
    filtering = time.perf_counter() - clock
    clock = time.perf_counter()
    view.page.fill("#dg-filter-text", "hanging up")
    view.page.wait_for_function("() => !/of 2500$/.test(document.getElementById('dg-range').textContent)", timeout=20_000)
    searching = time.perf_counter() - clock
    clock = time.perf_counter()
    view.page.click("#dg-list li >> nth=0")
    view.page.wait_for_selector("#dg-detail h2")
    opening = time.perf_counter() - clock
    clock = time.perf_counter()
    view.page.click("#dg-next")
    paging = time.perf_counter() - clock
    view.check_clean()
    timings = {
        "dialogues": count, "page_mb": round(html.stat().st_size / 1e6, 1), "run_mb": round(run.stat().st_size / 1e6, 1),
        "generation_s": round(generation, 2), "load_to_interactive_s": round(view.seconds, 2), "in_page_ready_ms": ready_ms,
        "filter_s": round(filtering, 3), "first_text_search_s": round(searching, 3), "open_dialogue_s": round(opening, 3),
        "next_page_s": round(paging, 3),
    }
    print(f"\nviewer with 10,000 dialogues: {json.dumps(timings)}")
    (tmp_path / "viewer-10k.json").write_text(json.dumps(timings, indent=2) + "\n")
    keep(tmp_path / "viewer-10k.json")
    assert generation < 60 and view.seconds < 30 and filtering < 5 and searching < 10 and opening < 5 and paging < 5
    view.page.close()


def test_the_docs_screenshots_come_from_this_page(browser, tmp_path):
    """docs/images/viewer-overview.png and viewer-dialogue.png are what this test sees:
    ``DIALOGUE_GYM_ARTEFACTS=docs/images python -m pytest tests/test_viewer_browser.py -k docs_screenshots``."""
    run = tmp_path / "run.jsonl"
    play("SEAD-Outbound-v0", run, ["sop", "adaptive"], episodes=8)
    html, count = write_view(run)
    view = Opened(browser, html, width=1280, height=900)
    assert count == 16 and view.page.locator("#dg-summary svg").count() >= 2
    overview = tmp_path / "viewer-overview.png"
    view.page.screenshot(path=str(overview))
    view.page.click("#dg-list li[data-index='9']")
    detail = view.page.locator("#dg-detail")
    assert detail.locator("h2").inner_text().startswith("Dialogue #9") and detail.locator("svg.state-chart").count() == 1
    dialogue = tmp_path / "viewer-dialogue.png"
    detail.screenshot(path=str(dialogue))
    view.check_clean()
    for shot in (overview, dialogue):
        assert shot.stat().st_size > 10_000
        keep(shot)
    view.page.close()


def test_a_training_run_filters_by_iteration_and_says_it_is_a_sample(browser, tmp_path):
    folder = training_folder(tmp_path / "sead-run", iterations=5, per_iteration=30)
    html, count = write_view(folder, per_iteration=3, sample_seed=11)
    view = Opened(browser, html)
    note = view.page.inner_text("#dg-training")
    assert count == 15 and note.startswith("Training run sead-run (preset cpu-lm-scratch): 15 of its 150 dialogues over 5 iterations")
    assert "at most 3 per iteration, sampled with seed 11" in note
    assert view.range() == "1\u201315 of 15" and all("trained agent: lm (scratch)" in item for item in view.items())
    assert view.page.locator("#dg-summary svg.iteration-chart circle").count() == 10  # success and mean reward at 5 iterations
    view.page.fill("#dg-filter-iteration", "2")
    assert view.range() == "1\u20133 of 3" and all("iteration 2 \u00b7" in item for item in view.items())
    assert view.page.locator("#dg-summary svg.iteration-chart circle").count() == 2  # the chart follows the filters
    view.page.fill("#dg-filter-iteration", "3-4")
    assert view.range() == "1\u20136 of 6"
    view.page.fill("#dg-filter-iteration", "3-")
    assert "bad" in view.page.get_attribute("#dg-filter-iteration", "class") and view.range() == "1\u20136 of 6"  # kept until valid
    view.page.click("#dg-list li >> nth=0")
    assert view.page.inner_text("#dg-detail p.muted").startswith("iteration 3 \u00b7 episode ")
    view.check_clean()
    view.page.close()
