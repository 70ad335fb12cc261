"""The inspector page in a real browser: starts inspect_demo on a free
port, changes a value through the API's PUT, then loads the page in
Debian's chromium, headless, and checks the DOM it builds: the entity
count, a system's name, named entities of the hierarchy, and the changed
value in the selected entity's editor. Then takes a screenshot.

Usage: browser.py INSPECT_DEMO SCREENSHOT.png"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from common import request, start, stop  # noqa: E402

demo, shot = sys.argv[1], sys.argv[2]
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if not chromium:
    sys.exit("chromium is not installed: apt-get install chromium (CI installs it)")

p, host, port = start(demo, "--entities", "5000", "--fps", "120")
failures = []
try:
    st, page = request(host, port, "GET", "/api/entities?with=Ship,Health&limit=1")
    assert st == 200 and page["entities"], page
    ship = page["entities"][0]["id"]
    st, world = request(host, port, "GET", "/api/world")
    assert st == 200 and isinstance(world.get("tick"), int) and world["tick"] >= 1, world
    st, reply = request(host, port, "PUT", "/api/entity/%s/Ship" % ship,
                        '{"callsign": "edited-by-put", "cargo": 777}')
    assert st == 200, reply
    url = "http://127.0.0.1:%d/#entity=%s" % (port, ship)
    with tempfile.TemporaryDirectory() as profile:
        base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-extensions", "--disable-dev-shm-usage", "--user-data-dir=" + profile,
                "--window-size=1440,900", "--hide-scrollbars"]
        dom = subprocess.run(base + ["--virtual-time-budget=4000", "--dump-dom", url],
                             capture_output=True, text=True, timeout=120).stdout
        subprocess.run(base + ["--virtual-time-budget=4000", "--screenshot=" + shot, url],
                       capture_output=True, text=True, timeout=120)

    def expect(pattern, what):
        if not re.search(pattern, dom):
            failures.append(what)
            print("FAIL: the page does not show", what)

    expect(r'id="s-entities">5,000<', "the entity count (5,000)")
    expect(r'id="s-tick">[0-9,]+<', "the world's tick")
    expect(r"<td>move</td>", "the system 'move'")
    expect(r"<td>orbit</td>", "the system 'orbit'")
    expect(r">Sol<", "the root entity 'Sol' in the hierarchy")
    expect(r">Earth<", "'Earth' under Sol")
    expect(r">fleet-0<", "'fleet-0' under Fleets")
    expect(r"Fleets/fleet-\d+/ship-\d+-\d+", "the selected ship's path")
    expect(r'value="edited-by-put"', "the callsign changed through PUT")
    expect(r'value="777"', "the cargo changed through PUT")
    if not os.path.exists(shot) or os.path.getsize(shot) < 10000:
        failures.append("screenshot")
        print("FAIL: no screenshot at", shot)
    if failures:
        print(dom[:4000])
finally:
    stop(p)
if failures:
    sys.exit("%d failures" % len(failures))
print("browser: the page shows the world; screenshot at", shot)
