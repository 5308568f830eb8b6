"""Which commit and branch a run belongs to: given, else CI variables, else git, else the run's.

The run's own `git_commit` comes last: `ncuh profile` records the commit of the ncuh checkout
it ran from, which is the project's commit only when the project lives in that checkout.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

# (commit variable, branch variable) of common CI systems, checked in this order.
CI_VARIABLES: tuple[tuple[str, str], ...] = (
    ("GITHUB_SHA", "GITHUB_REF_NAME"),
    ("CI_COMMIT_SHA", "CI_COMMIT_REF_NAME"),  # GitLab
    ("BUILDKITE_COMMIT", "BUILDKITE_BRANCH"),
    ("CIRCLE_SHA1", "CIRCLE_BRANCH"),
    ("BITBUCKET_COMMIT", "BITBUCKET_BRANCH"),
    ("GIT_COMMIT", "GIT_BRANCH"),  # Jenkins
)


def ci_commit(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The first CI system's (commit, branch) whose commit variable is set."""
    for commit_var, branch_var in CI_VARIABLES:
        if env.get(commit_var):
            # a pull request's GITHUB_REF_NAME is "123/merge": GITHUB_HEAD_REF names the branch
            branch = env.get("GITHUB_HEAD_REF") if commit_var == "GITHUB_SHA" else None
            return env[commit_var], branch or env.get(branch_var) or None
    return None, None


def git(args: list[str], cwd: Path) -> str | None:
    """One line of git's output, or None where git or the repository is not there."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


def resolve_commit(commit: str | None, branch: str | None, manifest_commit: str | None,
                   cwd: Path, env: Mapping[str, str] | None = None,
                   ) -> tuple[str | None, str | None]:
    """(commit, branch): what was given, else CI variables, git, the run's own record."""
    env = os.environ if env is None else env
    ci_sha, ci_branch = ci_commit(env)
    if commit is None:
        commit = ci_sha or git(["rev-parse", "HEAD"], cwd) or manifest_commit
    if branch is None:
        branch = ci_branch or git(["rev-parse", "--abbrev-ref", "HEAD"], cwd)
        if branch == "HEAD":  # a detached checkout names no branch
            branch = None
    return commit, branch
