"""The command line itself: --version, a help text for every option of every step (plain text,
no reST markup), and an error said once."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

import pytest

import reranklab
from reranklab.cli import build_parser, main
from reranklab.workflow import SCHEMA
from tests.conftest import tool_env

MARKUP = re.compile(r"``|:(func|class|mod|data|meth|attr):`|`")


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def _run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reranklab.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=tool_env(),
        timeout=120,
    )


def test_version(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.strip() == f"reranklab {reranklab.__version__}"


def test_every_option_of_every_step_has_a_help_text():
    steps = _subparsers()
    assert {"download", "train", "init", "validate-config", "settings-schema"} <= set(steps)
    for name, step in steps.items():
        for action in step._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            label = "/".join(action.option_strings) or action.dest
            assert action.help, f"reranklab {name} {label}: no help text"
        assert step.description, f"reranklab {name}: no description"


@pytest.mark.parametrize("step", [None, *sorted(_subparsers())])
def test_help_is_plain_text(step):
    parser = build_parser() if step is None else _subparsers()[step]
    text = parser.format_help()
    assert not MARKUP.search(text), f"reST markup in `reranklab {step or ''} --help`:\n{text}"
    assert "usage: reranklab" in text


def test_an_error_is_said_once_on_stderr(tmp_path):
    out = _run("validate-config", "no-such.yaml", cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [
        "reranklab validate-config: error: config file no-such.yaml does not exist"
    ]


def test_a_missing_input_file_is_one_line_not_a_traceback(tmp_path, capsys):
    args = ["--run", "x.run", "--qrels", "q.txt", "--folds", "f.json", "--out", "m.json"]
    code = main(["evaluate", *args, "--fold", "0", "--spec", '{"scoring": {}}'])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("reranklab evaluate: error: [Errno 2]")
    assert err.count("error:") == 1


def _exit_code(argv: list[str]) -> int:
    """``main``'s exit status, whether it returns it or argparse exits."""
    try:
        return main(argv)
    except SystemExit as stopped:
        return int(stopped.code or 0)


EVALUATE = [
    "evaluate",
    "--run",
    "x.run",
    "--qrels",
    "q.txt",
    "--folds",
    "f.json",
    "--out",
    "m.json",
]


def test_a_spec_from_a_missing_file_is_one_error_line(capsys):
    code = _exit_code(["index", "--corpus", "c", "--out-dir", "o", "--spec", "@no-such.json"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    (line,) = [line for line in err.splitlines() if "error:" in line]
    assert line.startswith("reranklab index: error:")
    assert "--spec no-such.json: No such file or directory" in line


def test_a_spec_with_an_unknown_key_is_one_error_line_naming_the_key(capsys):
    code = _exit_code([*EVALUATE, "--fold", "0", "--spec", '{"scoring": {}, "bogus": 1}'])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    (line,) = [line for line in err.splitlines() if "error:" in line]
    assert line.startswith("reranklab evaluate: error:")
    assert "not a ScoringSpec" in line and "bogus: Extra inputs are not permitted" in line


def test_a_spec_that_is_not_json_is_one_error_line(capsys):
    code = _exit_code([*EVALUATE, "--fold", "0", "--spec", "{scoring: }"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    (line,) = [line for line in err.splitlines() if "error:" in line]
    assert line.startswith("reranklab evaluate: error:") and "not a ScoringSpec" in line


def test_settings_schema_checks_the_packaged_schema_by_default(capsys):
    assert main(["settings-schema", "--check"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.endswith("params.schema.yaml is up to date")
    assert SCHEMA.is_file() and SCHEMA.parent.parent.name == "workflow"


def test_help_lists_the_commands_a_person_types_and_names_the_workflow_steps():
    from reranklab.cli import WORKFLOW_STEPS

    text = build_parser().format_help()
    listed = set(re.findall(r"(?m)^    (\S+)", text[: text.index("options:")]))
    assert {"score", "regress", "status", "init", "datasets", "bench", "export"} <= listed
    assert not listed & WORKFLOW_STEPS
    steps = text[text.index("Workflow steps") :]
    assert all(step in steps for step in WORKFLOW_STEPS)
    # Every step is still a subcommand, and every command a rule runs is one of them (or typed).
    assert set(_subparsers()) >= WORKFLOW_STEPS
    from reranklab.workflow import RULES

    called = {
        name
        for rule_file in RULES.glob("*.smk")
        for name in re.findall(r"reranklab ([a-z-]+)", rule_file.read_text(encoding="utf-8"))
    }
    assert called - WORKFLOW_STEPS <= {"regress", "variants"}


def test_each_subcommand_is_one_module_of_steps_or_commands():
    from reranklab.cli import WORKFLOW_STEPS
    from reranklab.cli.commands import COMMANDS
    from reranklab.cli.steps import STEPS

    for module in (*STEPS, *COMMANDS):
        assert module.__doc__, f"{module.__name__}: no module docstring"
        assert isinstance(module.NAME, str) and isinstance(module.HELP, str)
        assert callable(module.add_arguments) and callable(module.run)
    # The steps are exactly the workflow steps; the parser lists steps first, then commands.
    assert {step.NAME for step in STEPS} == WORKFLOW_STEPS
    assert list(_subparsers()) == [module.NAME for module in (*STEPS, *COMMANDS)]
    assert all(_subparsers()[m.NAME].get_default("func") is m.run for m in (*STEPS, *COMMANDS))
