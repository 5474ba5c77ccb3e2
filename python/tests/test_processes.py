"""Processes taking turns on one key, judged by the project's history
checker (host-test's package_fixtures turns: s3_lease::testing::history)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Dict

from conftest import FIXTURES, python, s3_env

HERE = Path(__file__).parent


def test_processes_taking_turns_never_overlap_and_tokens_rise(
    s3: Dict[str, Any], prefix: str, tmp_path: Path
) -> None:
    env = s3_env(s3, prefix)
    takers = [python(str(HERE / "taker.py"), str(who), "turns", "4", "0.05", env=env) for who in range(3)]
    turns = []
    for taker in takers:
        out, err = taker.communicate(timeout=120)
        assert taker.returncode == 0, err
        turns.extend(out.splitlines())
    assert len(turns) == 12
    record = tmp_path / "turns.jsonl"
    record.write_text("\n".join(turns) + "\n")
    judged = subprocess.run([FIXTURES, "turns", str(record)], capture_output=True, text=True)
    assert judged.returncode == 0, judged.stdout + judged.stderr
    assert "12 turns judged, 0 violations" in judged.stdout


def test_the_checker_catches_overlapping_turns(tmp_path: Path) -> None:
    # The judge itself, on a record of two believed holders at once.
    record = tmp_path / "overlap.jsonl"
    record.write_text(
        '{"who": 0, "token": 1, "sent": 0, "acked": 10, "start": 10, "end": 100}\n'
        '{"who": 1, "token": 2, "sent": 50, "acked": 60, "start": 60, "end": 120}\n'
    )
    judged = subprocess.run([FIXTURES, "turns", str(record)], capture_output=True, text=True)
    assert judged.returncode == 1 and "never more believed holders" in judged.stdout, judged.stdout
