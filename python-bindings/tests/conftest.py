"""Shared fixtures: the source tree, a scratch copy of a case, and an
environment without user settings (no config file, no LLM, no webhook)."""
import os
import shutil

import pytest

SRC = os.environ.get("KERNLAB_SOURCE_DIR") or os.path.normpath(
    os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    monkeypatch.setenv("KL_CONFIG", str(tmp_path / "none.yaml"))
    (tmp_path / "none.yaml").write_text("# nothing configured\n")
    monkeypatch.setenv("KERNLAB_CACHE_DIR", str(tmp_path / "cache"))
    for k in ("KL_LLM_PROVIDER", "KL_LLM_MODEL", "KL_LLM_BASE_URL",
              "KL_WEBHOOK_URL", "KL_WEBHOOK_FORMAT"):
        monkeypatch.delenv(k, raising=False)


@pytest.fixture
def src():
    return SRC


@pytest.fixture
def small_matmul(tmp_path):
    """host_matmul at n = 64 and 96, without records."""
    d = tmp_path / "matmul"
    shutil.copytree(os.path.join(SRC, "cases", "host_matmul"), d,
                    ignore=shutil.ignore_patterns("runs", "*.jsonl", "*.csv",
                                                  "memory.summary.md"))
    y = (d / "case.yaml").read_text()
    y = y.replace("  - { name: n256, n: 256 }\n", "")
    y = y.replace("  - { name: n512, n: 512 }\n", "  - { name: n64, n: 64 }\n")
    y = y.replace("  - { name: n1024, n: 1024, weight: 2 }",
                  "  - { name: n96, n: 96, weight: 2 }")
    (d / "case.yaml").write_text(y)
    return d
