#!/usr/bin/env python3
"""Writes each ```python block of a Markdown file to its own module, for
mypy --strict (scripts/test_python.sh): the docs' examples are checked
against the installed package's types.

usage: python_examples.py DOC.md OUT_DIR
"""
import re
import sys
from pathlib import Path


def main(doc: str, out: str) -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", Path(doc).read_text(), re.M | re.S)
    if not blocks:
        sys.exit(f"python_examples: no ```python blocks in {doc}")
    for n, block in enumerate(blocks, 1):
        Path(out, f"example_{n:02}.py").write_text(block)
    print(f"python_examples: {len(blocks)} examples from {doc}")


if __name__ == "__main__":
    main(*sys.argv[1:])
