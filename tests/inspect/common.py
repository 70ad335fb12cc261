"""Helpers the inspector tests share: start the inspector demo, talk HTTP."""
import http.client
import json
import re
import subprocess
import sys
import time


def start(demo, *args):
    """Starts inspect_demo with args; returns (process, host, port)."""
    p = subprocess.Popen([demo, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.search(r"http://([^:/]+):(\d+)/", line)
    if not m:
        p.kill()
        out, err = p.communicate()
        sys.exit("inspect_demo did not print its URL: %r %s %s" % (line, out, err))
    return p, m.group(1), int(m.group(2))


def request(host, port, method, path, body=None, headers=None, timeout=20):
    """One request; returns (status, parsed JSON or text)."""
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    h = {"Host": "127.0.0.1"}
    h.update(headers or {})
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, data.decode("utf-8", "replace")


def stop(p):
    """Stops the demo (SIGTERM: it stops the inspector and frees the world)
    and returns its stderr; fails on a nonzero exit or a sanitizer report."""
    p.terminate()
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        sys.exit("inspect_demo did not stop within 30 s of SIGTERM")
    for bad in ("AddressSanitizer", "runtime error", "LeakSanitizer", "ThreadSanitizer"):
        if bad in err:
            sys.exit("sanitizer report from inspect_demo:\n" + err)
    if p.returncode != 0:
        sys.exit("inspect_demo exited with %d:\n%s" % (p.returncode, err))
    return err
