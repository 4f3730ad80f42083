"""fresh.without_packages: the README's test command on a machine without the
optional Python packages. usage: fresh_test.py CTEST BUILD_DIR REQUIREMENTS

Lists the tests labelled "packages" (ctest --show-only=json-v1, which runs
nothing), hides every package of REQUIREMENTS (and torch) from python3 with a
sitecustomize import hook, runs each test's command as ctest would, and wants
exit 0 or 77; a 77 must name what is missing and the install line. The hook is
checked first: `import numpy` must fail under it.
"""

import json
import os
import subprocess
import sys
import tempfile

ctest, build, req = sys.argv[1:4]
hidden = ["torch"]
for line in open(req):
    name = line.split("#", 1)[0].strip()
    if name:
        hidden.append(name)

HOOK = '''import sys
_HIDDEN = %r
class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _HIDDEN:
            raise ModuleNotFoundError("No module named %%r (hidden by tests/fresh)" %% name, name=name)
        return None
sys.meta_path.insert(0, _Hide())
''' % ([h.replace("-", "_") for h in hidden],)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


with tempfile.TemporaryDirectory(prefix="memra-fresh-") as tmp:
    with open(os.path.join(tmp, "sitecustomize.py"), "w") as f:
        f.write(HOOK)
    env = dict(os.environ)
    env["PYTHONPATH"] = tmp + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("CI", None)  # tests that refuse to skip on CI would fail here by design
    r = subprocess.run(["python3", "-c", "import numpy"], env=env, capture_output=True, text=True)
    if r.returncode == 0:
        fail("the import hook does not hide numpy")
    listing = subprocess.run([ctest, "--test-dir", build, "--show-only=json-v1", "-L", "packages"],
                             capture_output=True, text=True)
    if listing.returncode != 0:
        fail("ctest --show-only: " + listing.stderr)
    tests = json.loads(listing.stdout)["tests"]
    if len(tests) < 3:
        fail("want at least 3 tests labelled packages, got %d" % len(tests))
    skipped = 0
    for t in tests:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        wd = props.get("WORKING_DIRECTORY", build)
        r = subprocess.run(t["command"], cwd=wd, env=env, capture_output=True, text=True, timeout=500)
        out = r.stdout + r.stderr
        if r.returncode == 77:
            skipped += 1
            if "SKIP:" not in out or "pip install -r tests/requirements.txt" not in out:
                fail("%s skipped without naming the packages and the install line:\n%s" % (t["name"], out[-2000:]))
            print("%s: skipped: %s" % (t["name"], [l for l in out.splitlines() if "SKIP:" in l][0]))
        elif r.returncode == 0:
            print("%s: passed without the optional packages" % t["name"])
        else:
            fail("%s exits %d without the optional packages:\n%s" % (t["name"], r.returncode, out[-3000:]))
    if skipped == 0:
        fail("no test skipped: is the hook working?")
    print("PASS: %d tests, %d skipped with their reason" % (len(tests), skipped))
