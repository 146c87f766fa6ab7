"""A pinned npm package installed once into $AUGUR_CACHE/npm/<name>-<version>.

The install runs with a time limit, under a lock (parallel runs share the
cache), into a scratch folder that is renamed into place only when the
package's binary answers `--version` with the pinned version; a broken or
half-finished install is never reused. Every failure is a test failure.
"""

import fcntl
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

INSTALL_TIMEOUT_S = 300


def _fail(msg):
    pytest.fail(msg, pytrace=False)


def _version_ok(binary, expect, env):
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    text = (out.stdout + out.stderr).strip()
    return out.returncode == 0 and expect in text, text


def install(cache, package, version, bin_name, expect_version_text):
    """Path of `bin_name` from `package@version`, installing it first when needed."""
    npm = shutil.which("npm")
    if npm is None:
        _fail("npm not found on PATH: Node.js and npm are needed to install %s@%s" % (package, version))
    root = Path(cache) / "npm"
    root.mkdir(parents=True, exist_ok=True)
    slug = package.replace("@", "").replace("/", "-")
    final = root / ("%s-%s" % (slug, version))
    binary = final / "node_modules" / ".bin" / bin_name
    env = dict(os.environ, DISABLE_AUTOUPDATER="1")
    with open(root / (slug + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists() and _version_ok(binary, expect_version_text, env)[0]:
            return binary
        shutil.rmtree(final, ignore_errors=True)
        scratch = root / ("%s-%s.tmp-%d" % (slug, version, os.getpid()))
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        argv = [npm, "install", "--prefix", str(scratch), "--no-audit", "--no-fund", "--no-save",
                "--loglevel=error", "%s@%s" % (package, version)]
        t0 = time.monotonic()
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=env)
        except subprocess.TimeoutExpired:
            shutil.rmtree(scratch, ignore_errors=True)
            _fail("npm install %s@%s did not finish within %d s" % (package, version, INSTALL_TIMEOUT_S))
        if out.returncode != 0:
            shutil.rmtree(scratch, ignore_errors=True)
            _fail("npm install %s@%s failed (exit %d):\n%s\n%s"
                  % (package, version, out.returncode, out.stdout[-3000:], out.stderr[-3000:]))
        ok, text = _version_ok(scratch / "node_modules" / ".bin" / bin_name, expect_version_text, env)
        if not ok:
            shutil.rmtree(scratch, ignore_errors=True)
            _fail("%s@%s installed, but `%s --version` gave %r, not %r"
                  % (package, version, bin_name, text, expect_version_text))
        scratch.rename(final)
        print("[e2e] installed %s@%s in %.0f s -> %s" % (package, version, time.monotonic() - t0, final))
        return binary
