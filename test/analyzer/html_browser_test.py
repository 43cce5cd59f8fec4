#!/usr/bin/env python3
"""The HTML report in a real browser (Debian's headless chromium).

Generates demo jobs with perftracker-gen (a slow rank; slow network links with per-link data;
1,024 ranks for size), renders `perftracker analyze --html`, and loads each page in chromium:
no console message at all (a malformed SVG attribute, a blocked resource or a script would log
one), the key elements present in the DOM chromium built, hostile names shown as text. Writes
screenshots into --out for the test log. Exits 77 (CTest SKIP_RETURN_CODE) when no chromium is
installed.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
# The job id holds markup, quotes and an ampersand: it must come out as text everywhere.
HOSTILE_JOB = "demo<script>alert(1)</script>&\"'"


def find_chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def chromium(browser, args, url):
    """Runs headless chromium once on a fresh profile; returns (stdout, console lines)."""
    with tempfile.TemporaryDirectory(prefix="pt-chromium-") as profile:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", f"--user-data-dir={profile}", "--enable-logging=stderr",
               "--v=0"] + args + [url]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit(f"FAIL: chromium exited {r.returncode}\n{r.stderr[-3000:]}")
    # Console messages (errors, warnings, CSP violations) are logged as INFO:CONSOLE lines.
    console = [l for l in r.stderr.splitlines() if ":CONSOLE" in l or "Uncaught" in l]
    return r.stdout, console


def make_report(tools, out, name, gen_args):
    data = os.path.join(out, name)
    shutil.rmtree(data, ignore_errors=True)
    run([tools.gen, "--dir", data] + gen_args)
    html = os.path.join(out, name + ".html")
    run([tools.perftracker, "analyze", data, "--html", html])
    shutil.rmtree(data)  # a 1,024-rank job is a gigabyte of rings
    return html


def check_page(browser, html, expect, failures):
    url = "file://" + os.path.abspath(html)
    dom, console = chromium(browser, ["--dump-dom"], url)
    for line in console:
        failures.append(f"{html}: console message: {line}")
    for label, pattern in expect.items():
        if not re.search(pattern, dom, re.S):
            failures.append(f"{html}: missing {label} ({pattern})")
    if re.search(r"<script", dom, re.I):
        failures.append(f"{html}: a <script> element in the DOM")
    return dom


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--perftracker", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--out", required=True)
    tools = ap.parse_args()
    browser = find_chromium()
    if browser is None:
        print("SKIP: no chromium installed (apt-get install chromium, or tools/setup.sh)")
        return SKIP
    os.makedirs(tools.out, exist_ok=True)
    failures = []

    demo = make_report(tools, tools.out, "html_demo",
                       ["--ranks", "32", "--slow-rank", "5", "--slow-factor", "1.3",
                        "--job", HOSTILE_JOB])
    common = {
        "verdict": r'id="verdict"[^>]*>.*?Most likely cause',
        "step-time chart": r'<svg[^>]*id="steptime-svg".*?<polyline',
        "heat map": r'<table class="heat">.*?</table>',
        "candidate section": r'<section class="cand" id="cand-1">.*?<details>',
        "inputs": r'id="inputs"',
    }
    dom = check_page(browser, demo, dict(common, **{
        "rank 5 highlighted": r'class="legend">.*?rank 5<',
        "step time outside collectives": r'<svg[^>]*id="owntime-svg".*?<g class="slow"',
        "candidate's heat-map cell outlined": r'<table class="heat">.*?<td class="cand"',
        "escaped job id": re.escape("job <code>demo&lt;script&gt;alert(1)&lt;/script&gt;&amp;\"'"),
    }), failures)
    if "demo<script>" in dom:
        failures.append("the hostile job id became markup")

    links = make_report(tools, tools.out, "html_links",
                        ["--ranks", "32", "--ranks-per-host", "4", "--net-links", "--fault",
                         "slow-link", "--fault-rank", "7", "--fault-peer", "8", "--fault-factor",
                         "3.3"])
    check_page(browser, links, dict(common, **{
        "link matrix": r'id="links".*?<table class="heat links">.*?<td class="cand"',
    }), failures)

    # A big job stays small: the peers become a band, the tables are capped.
    big = make_report(tools, tools.out, "html_1024",
                      ["--ranks", "1024", "--windows", "4", "--ring-mb", "1", "--functions", "60",
                       "--collectives", "8", "--jobs", "2", "--slow-rank", "700",
                       "--slow-factor", "1.3"])
    size = os.path.getsize(big)
    print(f"1,024 ranks: {size} bytes of HTML")
    if size > 2 << 20:
        failures.append(f"{big}: {size} bytes for 1,024 ranks (limit 2 MiB)")
    check_page(browser, big, {"peer band": r'class="band"', "capped heat map": r"Showing 32 of 1024"},
               failures)

    for html, png in ((demo, "html_report.png"), (links, "html_report_links.png"),
                      (big, "html_report_1024.png")):
        path = os.path.join(os.path.abspath(tools.out), png)
        chromium(browser, [f"--screenshot={path}", "--window-size=1400,2000",
                           "--hide-scrollbars"], "file://" + os.path.abspath(html))
        if not os.path.exists(path) or os.path.getsize(path) < 10000:
            failures.append(f"no screenshot at {path}")
        print(f"screenshot: {path}")

    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
