# -*- coding: utf-8 -*-
"""Open a run directory's report.html in a real browser and check what a reader sees.

    python tests/browser/check_html.py RUN_DIR [--screenshot PATH]

Headless Chromium driven by chromedriver (Debian's ``chromium`` and ``chromium-driver``, ``make setup-test``) through
Selenium. Against the run's report.json it checks: the page logs no console error and loads nothing from anywhere
(no resource requests at all); every step has its line in the steps' table and every step drawn in full its section;
per full step, one ``rect.flow-bar`` per flow that completed, each as wide on screen as its completion time says
(within 1% of the step's longest bar), each worker's hatched idle time as wide as the step minus its completion, the
straggler marked (``.straggler`` elements naming the report's straggler host, its bar in a colour of its own); a
failed step lists each failed worker's cause; an experiment of several steps draws its step-time distribution. Then
it saves a screenshot of the whole page (RUN_DIR/report.png unless ``--screenshot`` says where).

Exits 0 when every check holds, 1 naming each check that failed, 2 when it cannot check (no report, no browser).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WIDTH, HEIGHT = 1400, 900
MAX_SCREENSHOT_HEIGHT = 16000  # Chromium's screenshots fail beyond about 16k pixels
TOLERANCE = 0.01  # a bar's width against its completion, as a share of the step's longest bar

_BARS = """
return Array.from(arguments[0].querySelectorAll(arguments[1])).map(function (e) {
  var r = e.getBoundingClientRect();
  return {host: e.getAttribute('data-host'), flow: e.getAttribute('data-flow'), width: r.width, height: r.height,
          cls: e.getAttribute('class'), fill: window.getComputedStyle(e).fill};
});
"""


class Failures(list):
    def check(self, ok, message):
        if not ok:
            self.append(message)
        return ok


def expected_bars(step):
    """(host, flow) -> completion_s for every flow of the step that completed (a worker that failed has no bar)."""
    out = {}
    for w in step.get("workers") or []:
        if w.get("status") != "ok" or w.get("completion_s") is None:
            continue
        for f in w.get("flows") or [dict(w, flow_id=w["host"])]:
            out[(w["host"], f.get("flow_id") or w["host"])] = f["completion_s"]
    return out


def check_step(driver, section, step, failures):
    name = step["step"]
    want = expected_bars(step)
    bars = driver.execute_script(_BARS, section, "rect.flow-bar")
    failures.check(len(bars) == len(want), "step %s: %d flow bars on the page, %d flows completed in report.json"
                   % (name, len(bars), len(want)))
    got = {(b["host"], b["flow"]): b for b in bars}
    failures.check(set(got) == set(want), "step %s: bars for %s, report.json's flows %s"
                   % (name, sorted(got), sorted(want)))
    pairs = [(want[k], got[k]["width"]) for k in want if k in got]
    for key, b in got.items():
        failures.check(b["height"] > 0, "step %s: the bar of %s is not displayed" % (name, key))
    if pairs:
        longest_c, longest_w = max(pairs)
        failures.check(longest_w > 100, "step %s: the longest bar is %.1f px wide on screen" % (name, longest_w))
        scale = longest_w / longest_c if longest_c else 0.0
        for key in want:
            if key in got:
                off = abs(got[key]["width"] - want[key] * scale)
                failures.check(off <= TOLERANCE * longest_w, "step %s: the bar of %s is %.2f px wide, its completion "
                               "%.6f s says %.2f px (off by %.2f%% of the longest bar)" % (
                                   name, key, got[key]["width"], want[key], want[key] * scale,
                                   off / longest_w * 100))
        if step.get("step_s") is not None:
            idle = {b["host"]: b["width"] for b in driver.execute_script(_BARS, section, "rect.idle")}
            for w in step["workers"]:
                if w.get("idle_s"):
                    failures.check(w["host"] in idle, "step %s: no idle time drawn for %s (idle %.3f s)"
                                   % (name, w["host"], w["idle_s"]))
                    if w["host"] in idle:
                        off = abs(idle[w["host"]] - w["idle_s"] * scale)
                        failures.check(off <= TOLERANCE * longest_w, "step %s: %s's idle time is %.2f px wide, "
                                       "%.6f s says %.2f px" % (name, w["host"], idle[w["host"]], w["idle_s"],
                                                                w["idle_s"] * scale))
    straggler = (step.get("straggler") or {}).get("host")
    if straggler:
        marked = driver.execute_script(_BARS, section, ".straggler")
        failures.check(any(m["host"] == straggler for m in marked),
                       "step %s: no element of class straggler names %s" % (name, straggler))
        failures.check(all(m["host"] == straggler for m in marked), "step %s: elements of class straggler name %s, "
                       "the straggler is %s" % (name, sorted({m["host"] for m in marked}), straggler))
        marked_bar = [b for b in bars if "straggler" in (b["cls"] or "").split()]
        failures.check(len(marked_bar) == 1 and marked_bar[0]["host"] == straggler,
                       "step %s: the straggler's bar is %s, expected one bar of %s" % (
                           name, [(b["host"], b["flow"]) for b in marked_bar], straggler))
        others = {b["fill"] for b in bars if b not in marked_bar}
        failures.check(not marked_bar or marked_bar[0]["fill"] not in others, "step %s: the straggler's bar has the "
                       "others' colour %s" % (name, marked_bar[0]["fill"] if marked_bar else None))
    if step["status"] != "ok":
        causes = driver.execute_script(
            "return Array.from(arguments[0].querySelectorAll('li.failed-cause')).map("
            "function (e) { return [e.getAttribute('data-host'), e.textContent]; });", section)
        for f in step.get("failed") or []:
            failures.check(any(h == f["host"] and f["cause"] in text for h, text in causes),
                           "step %s: the cause of %s (%s) is not shown" % (name, f["host"], f["cause"]))


def check_page(driver, report, failures):
    from selenium.webdriver.common.by import By

    failures.check(driver.title.startswith("Barrier report"), "the page's title is %r" % driver.title)
    requests = driver.execute_script("return performance.getEntriesByType('resource').map(function (e) "
                                     "{ return e.name; });")
    failures.check(not requests, "the page loaded resources: %s" % requests)
    rows = {r.get_attribute("data-step"): r.get_attribute("data-detail")
            for r in driver.find_elements(By.CSS_SELECTOR, "tr.step-row")}
    sections = {s.get_attribute("data-step"): s for s in driver.find_elements(By.CSS_SELECTOR, "section.step")}
    steps = report.get("steps") or []
    failures.check(set(rows) == {s["step"] for s in steps}, "the steps' table lists %s, report.json has %s"
                   % (sorted(rows), sorted(s["step"] for s in steps)))
    full = 0
    for step in steps:
        detail = rows.get(step["step"])
        if detail == "full" or step["status"] != "ok":
            failures.check(step["step"] in sections, "step %s has no section" % step["step"])
        if step["step"] in sections:
            full += 1
            check_step(driver, sections[step["step"]], step, failures)
    failures.check(full > 0 or not steps, "no step is drawn in full")
    pictures = {e.get_attribute("data-experiment"): e
                for e in driver.find_elements(By.CSS_SELECTOR, "section.experiment")}
    for e in report.get("experiments") or []:
        if e.get("steps", 0) < 2:
            continue
        section = pictures.get(e["name"])
        if not failures.check(section is not None, "experiment %s (%d steps) has no section" % (e["name"], e["steps"])):
            continue
        bars = section.find_elements(By.CSS_SELECTOR, "svg.distribution circle.dist-point")
        failures.check(len(bars) == e["steps_ok"], "experiment %s: %d step points in its distribution, %d steps ok"
                       % (e["name"], len(bars), e["steps_ok"]))
        if e.get("step_s"):
            failures.check(bool(section.find_elements(By.CSS_SELECTOR, "line.p50"))
                           and bool(section.find_elements(By.CSS_SELECTOR, "line.p99")),
                           "experiment %s: no p50/p99 line" % e["name"])
    return len(sections)


def screenshot(driver, path):
    height = driver.execute_script("return Math.max(document.documentElement.scrollHeight, "
                                   "document.body.scrollHeight);")
    driver.set_window_size(WIDTH, min(max(HEIGHT, int(height) + 20), MAX_SCREENSHOT_HEIGHT))
    if not driver.save_screenshot(path):
        raise RuntimeError("the screenshot could not be written to %s" % path)
    return height


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("run_dir")
    parser.add_argument("--screenshot", help="where to save the screenshot (default RUN_DIR/report.png)")
    args = parser.parse_args(argv)
    run_dir = os.path.abspath(args.run_dir)
    page, data = os.path.join(run_dir, "report.html"), os.path.join(run_dir, "report.json")
    for path in (page, data):
        if not os.path.isfile(path):
            print("check_html: %s does not exist: render the run first (make render RUN=%s)" % (path, args.run_dir))
            return 2
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            print("check_html: %s is missing: install Debian's chromium and chromium-driver (make setup-test)" % path)
            return 2
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        print("check_html: selenium is not installed (%s): pip install -r requirements-test.txt" % exc)
        return 2
    with open(data) as handle:
        report = json.load(handle)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=%d,%d" % (WIDTH, HEIGHT), "--hide-scrollbars"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    failures = Failures()
    driver = None
    try:
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
        driver.set_window_size(WIDTH, HEIGHT)
        driver.get("file://" + page)
        full = check_page(driver, report, failures)
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        failures.check(not errors, "console errors: %s" % "; ".join(e.get("message", "") for e in errors))
        shot = os.path.abspath(args.screenshot or os.path.join(run_dir, "report.png"))
        height = screenshot(driver, shot)
        version = driver.capabilities.get("browserVersion")
    finally:
        if driver is not None:
            driver.quit()
    if failures:
        print("check_html: %s: %d check(s) failed:" % (page, len(failures)))
        for message in failures:
            print("  - %s" % message)
        return 1
    print("check_html: %s OK in Chromium %s: %d steps (%d drawn in full), no console error, no request; screenshot "
          "%s (%s)" % (page, version, len(report.get("steps") or []), full, shot, "the whole page, %d px" % height
                       if height + 20 <= MAX_SCREENSHOT_HEIGHT else "the first %d px of %d" % (
                           MAX_SCREENSHOT_HEIGHT, height)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
