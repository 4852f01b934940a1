"""``prompteval``: companion commands that work on a project's cases, prompts and results."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_prompteval import __version__
from pytest_prompteval.cases import load_case_file
from pytest_prompteval.errors import PromptevalError
from pytest_prompteval.prompts import PROMPT_SUFFIXES, available_versions, load_prompt


def _case_files(directories: Sequence[Path]) -> list[Path]:
    return sorted(
        p for d in directories if d.is_dir() for p in d.rglob("*") if p.suffix in PROMPT_SUFFIXES
    )


def inventory(case_dirs: Sequence[Path], prompt_dir: Path) -> dict[str, Any]:
    files = []
    for path in _case_files(case_dirs):
        case_file = load_case_file(path)
        files.append(
            {
                "file": str(path),
                "description": case_file.description,
                "cases": [
                    {
                        "id": c.id,
                        "category": c.category,
                        "difficulty": c.difficulty,
                        "quality": c.quality,
                        "description": c.description,
                    }
                    for c in case_file.cases
                ],
            }
        )
    prompts = []
    for version, path in available_versions(prompt_dir).items():
        prompt = load_prompt(path)
        prompts.append(
            {
                "version": version,
                "name": prompt.name,
                "model": prompt.model,
                "description": prompt.description,
            }
        )
    return {"case_files": files, "prompts": prompts}


def _print_table(rows: list[list[str]], indent: str = "  ") -> None:
    if not rows:
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def cmd_list(args: argparse.Namespace) -> int:
    data = inventory(args.cases, args.prompts)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    for case_file in data["case_files"]:
        print(f"{case_file['file']}: {case_file['description']}")
        _print_table(
            [
                [c["id"], c["category"] or "-", c["difficulty"] or "-", c["quality"] or "-"]
                for c in case_file["cases"]
            ]
        )
    print(f"prompt versions in {args.prompts}:")
    _print_table(
        [[p["version"], p["model"] or "(default model)", p["description"]] for p in data["prompts"]]
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="prompteval", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="cases per file, and the prompt versions")
    listing.add_argument(
        "--cases",
        type=Path,
        action="append",
        help="case directory (repeatable; default prompt_cases)",
    )
    listing.add_argument(
        "--prompts", type=Path, default=Path("prompts"), help="prompt directory (default prompts)"
    )
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.set_defaults(run=cmd_list)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "cases", None) is None:
        args.cases = [Path("prompt_cases")]
    try:
        code: int = args.run(args)
    except PromptevalError as exc:
        print(f"prompteval: error: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
