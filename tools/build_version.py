"""The build version: TENSORPLAY_BUILD_VERSION if set, else version.txt plus the git SHA.

Used by scikit-build-core as an in-tree metadata provider and by CMake (run as a script)
to write ``tensorplay/version.py``; both ask this one function.
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def git_sha(root: Path = ROOT) -> str:
    """Full SHA of HEAD, or "" outside a git checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def build_version(root: Path = ROOT) -> str:
    explicit = os.environ.get("TENSORPLAY_BUILD_VERSION", "").strip()
    if explicit:
        return explicit
    base = (root / "version.txt").read_text().strip()
    sha = git_sha(root)
    return f"{base}+git{sha[:7]}" if sha else base


def dynamic_metadata(field, settings=None):
    if field != "version":
        raise ValueError(f"build_version provides only 'version', not {field!r}")
    return build_version()


if __name__ == "__main__":
    # CMake: python build_version.py OUT_FILE -> writes tensorplay/version.py
    version, sha = build_version(), git_sha()
    text = (f'"""Generated at build time; not in git."""\n'
            f'__version__ = {version!r}\n'
            f'git_version = {sha!r}\n'
            f'cuda = {sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "None" else None!r}\n')
    Path(sys.argv[1]).write_text(text)
