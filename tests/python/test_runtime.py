"""What the binding promises beyond values: no leak over 10,000 calls, the
GIL released during long calls, the library found as docs/python.md says,
and the PyTorch hook example when torch is installed."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import attngeom
from conftest import ROOT, TINY_GPT2


def rss_pages():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1])


# Under make sanitize, ASan holds freed memory in quarantine: RSS cannot
# tell a leak there (LeakSanitizer does, for the library's own tests).
rss_meaningful = pytest.mark.skipif(bool(os.environ.get("AG_SANITIZE")),
                                    reason="AG_SANITIZE: ASan's quarantine keeps freed memory")


@rss_meaningful
def test_no_leak_over_10000_calls():
    A = np.random.default_rng(0).random((2, 4, 4))
    bad = A.copy()
    bad[0, 0, 0] = np.nan

    def calls(n):
        for k in range(n):
            attngeom.matrix_metrics(A, "all", jobs=1)
            if k % 10 == 0:
                with pytest.raises(attngeom.Error):
                    attngeom.matrix_metrics(bad)
    calls(1000)  # warm-up: allocator pools, Python caches
    before = rss_pages()
    calls(10000)
    grown = (rss_pages() - before) * os.sysconf("SC_PAGE_SIZE")
    # a leak of one record list per call (~10 kB) would be ~100 MB
    assert grown < 2 << 20, "RSS grew by %d bytes over 10,000 calls" % grown


@rss_meaningful
def test_model_no_leak():
    m = attngeom.Model(TINY_GPT2)
    for _ in range(50):
        m.analyze("Hi there", jobs=1)
    before = rss_pages()
    for _ in range(1000):
        m.analyze("Hi there", jobs=1)
        m.attention([1, 2, 3])
    grown = (rss_pages() - before) * os.sysconf("SC_PAGE_SIZE")
    assert grown < 2 << 20, "RSS grew by %d bytes over 1,000 passes" % grown


def test_gil_released_during_a_call():
    """While a long library call runs in a thread, Python code runs in this
    one: a CDLL call releases the GIL (PyDLL would not)."""
    A = np.random.default_rng(1).random((400, 400))
    span = {}

    def work():
        span["start"] = time.perf_counter()
        attngeom.matrix_metrics(A, "all", jobs=1)
        span["end"] = time.perf_counter()

    t = threading.Thread(target=work)
    ticks = []
    t.start()
    while t.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    t.join()
    assert span["end"] - span["start"] > 0.02, "the call is too short to tell"
    inside = [x for x in ticks if span["start"] + 0.005 < x < span["end"] - 0.005]
    assert len(inside) >= 3, "the main thread did not run during the call"


def test_library_from_env_and_bad_env(tmp_path):
    code = "import attngeom, sys; print(attngeom._lib.lib._name)"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    env["ATTNGEOM_LIB"] = str(ROOT / "build" / "libattngeom.so")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == env["ATTNGEOM_LIB"], p.stderr
    env["ATTNGEOM_LIB"] = str(tmp_path / "missing.so")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert p.returncode == 1
    assert "ImportError: attngeom: cannot load libattngeom.so (tried ATTNGEOM_LIB=%s)" \
        % env["ATTNGEOM_LIB"] in p.stderr


def test_version():
    assert isinstance(attngeom.__version__, str) and attngeom.__version__


def run_example(name):
    """examples/python/NAME with the package from the source tree; it must succeed."""
    p = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / name)],
                       env=dict(os.environ, PYTHONPATH=str(ROOT / "python")),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p


def test_torch_hook_example():
    pytest.importorskip("torch")
    p = run_example("torch_hook.py")
    lines = p.stdout.splitlines()
    assert lines[0].split()[:3] == ["layer", "head", "entropy_mean"]
    assert len([l for l in lines if l[:1].isdigit()]) == 16  # 4 layers x 4 heads
    assert "attention equals attngeom's own: True" in p.stdout


def test_hf_attentions_example():
    """outputs.attentions of a padded batch in one call: a record per
    (sequence, layer, head), each sequence cut to its own tokens."""
    pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")
    p = run_example("hf_attentions.py")
    lines = p.stdout.splitlines()
    assert lines[0].split()[:4] == ["batch", "layer", "head", "rows"]
    records = [l.split() for l in lines if l[:1].isdigit() and len(l.split()) == 7]
    assert len(records) == 48  # 3 texts x 4 layers x 4 heads
    assert {(r[0], r[3]) for r in records} == {("0", "11"), ("1", "10"), ("2", "5")}
    assert "3 texts of 11, 10, 5 tokens" in p.stdout
    assert "attention equals attngeom's own: True" in p.stdout


def test_table_example():
    pytest.importorskip("pandas")
    p = run_example("table.py")
    assert p.stdout.startswith("64 records: 4 texts x 4 layers x 4 heads")
    assert "attngeom.aggregate" in p.stdout


def test_pip_install_offline(tmp_path):
    """docs/python.md's install command: a venv that sees Debian's numpy,
    pip without the network or build isolation (Debian's setuptools)."""
    import shutil
    src = tmp_path / "src"
    shutil.copytree(ROOT / "python", src, ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    p = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-index", "--no-build-isolation",
                        str(src)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    code = ("import attngeom, numpy as np; print(attngeom.__file__); "
            "print(attngeom.matrix_metrics(np.eye(3), 'sigma_max')[0]['sigma_max'])")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["ATTNGEOM_LIB"] = str(ROOT / "build" / "libattngeom.so")
    p = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=tmp_path, env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    where, value = p.stdout.split()
    assert where.startswith(str(venv)) and value == "1.0"
