"""fresh.readme: the README's two commands are what a fresh clone runs, and CI
runs the test command exactly. usage: fresh_readme.py SOURCE_DIR

Wants: the README's "Build and run the tests" command as a line of .ci/run;
the README's one install line for the optional packages
(python3 -m pip install -r tests/requirements.txt) naming a file that exists,
and .ci/run installing the same file.
"""

import os
import re
import sys

src = sys.argv[1]
readme = open(os.path.join(src, "README.md")).read()
ci = open(os.path.join(src, ".ci", "run")).read()


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


m = re.search(r"Build and run the tests[^\n]*\n\n    ([^\n]+)\n", readme)
if not m:
    fail("README: no 'Build and run the tests' command block")
cmd = m.group(1).strip()
if cmd not in [l.strip() for l in ci.splitlines()]:
    fail(".ci/run does not run the README's test command exactly: %r" % cmd)
line = "python3 -m pip install -r tests/requirements.txt"
if line not in readme:
    fail("README: no install line for the optional packages (%s)" % line)
if not os.path.isfile(os.path.join(src, "tests", "requirements.txt")):
    fail("tests/requirements.txt is missing")
if "-r tests/requirements.txt" not in ci:
    fail(".ci/run does not install tests/requirements.txt")
print("PASS: %s" % cmd)
