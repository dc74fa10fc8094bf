"""The docs stay true: the README's two first commands and an example for every command; every
`ctk ...` line of README.md, ARCHITECTURE.md and docs/*.md parses under ctk's own CLI; every
repository path and `ctk.` module they name exists."""

from __future__ import annotations

import importlib
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

from ctk.cli import compat
from ctk.cli.commands import build_app
from tests.cli_tree import Command, is_group, is_usage_error, leaves

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def _example_lines() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", README, re.S)
    return [line.removeprefix("sudo ") for block in blocks for line in block.splitlines()]


def test_every_command_has_an_example() -> None:
    commands = [" ".join(("ctk", *path)) for path, _ in leaves(build_app())]
    assert len(commands) >= 10
    examples = _example_lines()
    missing = [c for c in commands if not any(e == c or e.startswith(c + " ") for e in examples)]
    assert missing == []


def test_first_lines_are_install_and_test_commands() -> None:
    first_block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert first_block is not None
    install, test = first_block.group(1).splitlines()
    assert install == "scripts/install"  # root or not: it runs itself with sudo when needed
    assert (REPO / "scripts/install").stat().st_mode & 0o111
    assert test == "python3 -m pip install -e '.[test]' && scripts/check"
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    # CI takes the command from the README (what sed prints there is this line, verbatim) and
    # stops when any part of it fails: under set -e a failure before the last command of an &&
    # list does not stop a script
    sed_line = re.compile(r"test_command=\"\$\(sed -n '(.+)' README\.md\)\"")
    taken = [m for line in ci if (m := sed_line.fullmatch(line))]
    assert len(taken) == 1
    done = subprocess.run(
        ["sed", "-n", taken[0].group(1), str(REPO / "README.md")],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    assert done.stdout == f"{test}\n"
    assert 'PATH="$venv/bin:$PATH" bash -c "$test_command" || exit' in ci


def test_linked_docs_exist() -> None:
    for link in re.findall(r"\]\(([^)#]+)\)", README):
        assert (REPO / link).exists(), link


DOCS = [REPO / "README.md", REPO / "ARCHITECTURE.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
BUILT = {"ctk/_bin/ctk-hook"}
"""Paths the build makes (ignored by git), not files of the repository."""


def _code(text: str) -> list[tuple[str, str]]:
    """(language, text) of every fenced block, and ("inline", span) of every code span."""
    blocks = [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]
    prose = FENCE.sub("", text)
    return blocks + [("inline", span) for span in re.findall(r"`([^`\n]+)`", prose)]


def _command_lines(text: str) -> list[str]:
    """The `ctk ...` command lines shown in ``text``: in fenced blocks (prompts, `sudo`, variable
    assignments and comments dropped; `&&`, `;` and `|` split) and in code spans. A `text` block
    is output or a synopsis, not a command line."""
    lines = []
    for language, code in _code(text):
        if language == "text":
            continue
        for line in code.replace("\\\n", " ").splitlines():
            for part in re.split(r"&&|\|\||;|\|", re.sub(r"^\s*[$#]\s+", "", line)):
                words = part.split()
                while words and (words[0] == "sudo" or re.match(r"[A-Z_][A-Z0-9_]*=", words[0])):
                    words = words[1:]
                if words and (words[0] == "ctk" or words[0].endswith("/bin/ctk")):
                    lines.append(" ".join(words))
    return lines


def _parse_error(line: str) -> str | None:
    """Why click would refuse ``line`` (no such command or option, a missing option value, an
    extra argument, a value outside a choice), or None; nothing runs, no callback is called."""
    root: Command = build_app()
    args = compat.normalize(root, _arguments(line))
    if {"--help", "-h", "--version", "-V", "-v"} & set(args):
        return None
    command, name, ctx = root, "ctk", None
    try:
        while True:
            # resilient: no callbacks, no required-parameter errors; the parser then made strict
            ctx = command.make_context(name, list(args), parent=ctx, resilient_parsing=True)
            ctx.resilient_parsing = False
            opts, rest, _ = command.make_parser(ctx).parse_args(list(args))
            if not is_group(command):
                break
            if not rest:
                return None
            found, sub, args = command.resolve_command(ctx, rest)
            if sub is None or found is None:
                return f"no command {rest[0]}"
            command, name = sub, found
    except Exception as exc:
        if not is_usage_error(exc):
            raise
        return str(getattr(exc, "format_message", exc.__str__)())
    if rest and not ctx.allow_extra_args:  # what no argument took
        return f"unexpected arguments {rest}"
    return _choice_error(command, ctx, opts)


def _arguments(line: str) -> list[str]:
    """The arguments of command line ``line``, up to a redirection; a `<placeholder>` is `X`."""
    args: list[str] = []
    for word in shlex.split(line, comments=True)[1:]:
        placeholder = re.fullmatch(r"<[^<>]+>", word)
        if re.match(r"[0-9]*[<>]", word) and not placeholder:
            break
        args.append("X" if placeholder else word)
    return args


def _choice_error(command: Command, ctx: Any, opts: dict[str, object]) -> str | None:
    """Why a value given would be refused (a choice not offered, a number that is not one):
    each given value goes through its parameter's own conversion."""
    for param in command.params:
        given = opts.get(param.name or "")
        if given is None:
            continue
        try:
            param.process_value(ctx, given)
        except Exception as exc:
            if not is_usage_error(exc):
                raise
            return str(getattr(exc, "format_message", exc.__str__)())
    return None


def test_the_parse_check_refuses_what_ctk_refuses() -> None:
    assert _parse_error("ctk doctor --json") is None
    assert _parse_error("ctk hook create-symlinks --link a::b") is None  # the native program's
    assert _parse_error("ctk cdi generate --mode management -o x.yaml") is None
    assert _parse_error("ctk install --root <host-root> > out.txt") is None
    assert _parse_error("ctk doctor --bogus") is not None
    assert _parse_error("ctk cdi nope") is not None
    assert _parse_error("ctk cdi generate --mode nope") is not None
    assert _parse_error("ctk config --in-place --set") is not None
    assert _parse_error("ctk cdi diff a b c") is not None
    assert _parse_error("ctk --bogus doctor") is not None


def test_every_documented_command_line_parses() -> None:
    checked = {}
    for doc in DOCS:
        for line in _command_lines(doc.read_text()):
            checked[f"{doc.relative_to(REPO)}: {line}"] = _parse_error(line)
    assert len(checked) >= 100
    assert {where: error for where, error in checked.items() if error} == {}


def _repository_paths(text: str) -> set[str]:
    tops = "|".join(re.escape(p.name) for p in REPO.iterdir() if p.is_dir() and p.name != ".git")
    found = set()
    for _, code in _code(text):
        found.update(re.findall(rf"(?<![\w/.$~-])((?:{tops})/[\w./<>*{{}},-]*)", code))
    found.update(re.findall(r"\]\(([^)#:]+)[)#]", text))
    return {path.rstrip(".,") for path in found}


def test_every_documented_repository_path_exists() -> None:
    missing = []
    for doc in DOCS:
        for path in sorted(_repository_paths(doc.read_text()) - BUILT):
            pattern = re.sub(r"<[^<>]*>|\{[^{}]*\}", "*", path)
            base = doc.parent if path.startswith(("./", "../")) else REPO
            if not (list(base.glob(pattern)) if "*" in pattern else (base / path).exists()):
                missing.append(f"{doc.relative_to(REPO)}: {path}")
    assert missing == []


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_every_documented_module_exists() -> None:
    """`ctk.a.b` in a doc names a module of ctk (or a name in one) where `ctk/a` exists: so a
    renamed module (ctk/host/engines.py is ctk/host/engine_files.py) shows; `ctk.prom` and
    `ctk.nvidia.com/...` are no modules."""
    missing = []
    for doc in DOCS:
        for _, code in _code(doc.read_text()):
            for name in re.findall(r"(?<![\w/.-])ctk(?:\.\w+)+(?![\w/-])", code):
                first = REPO / "ctk" / name.split(".")[1]
                if (first.is_dir() or first.with_suffix(".py").is_file()) and not _resolves(name):
                    missing.append(f"{doc.relative_to(REPO)}: {name}")
    assert missing == []


# ctk has no public home yet: an address under a made-up owner (github.com/ctk/ctk,
# github.com/ctk-project/ctk) once sat in the units' Documentation=, the CDI schema's $id and
# the image's labels, sending users to a repository that does not exist. `.invalid` (RFC 2606)
# is the honest placeholder for identifiers that need a URL form.
MADE_UP = re.compile(r"github\.com/ctk(?:-project|-dev|-org)?/ctk\b|github\.com/ctk/")


def test_no_link_names_a_repository_that_does_not_exist() -> None:
    tracked = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z"],
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout.split(b"\0")
    found = []
    for name in filter(None, tracked):
        path = REPO / name.decode()
        if path.resolve() == Path(__file__).resolve() or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        found += [f"{name.decode()}: {m.group(0)}" for m in MADE_UP.finditer(text)]
    assert found == []


def test_every_kind_that_differs_from_nvidia_ctk_is_named_in_the_differences() -> None:
    """nvidia-ctk's CLI writes nvidia.com/gpu in every mode (its --class default): each mode
    whose default kind differs is a deliberate difference, named with its reason."""
    from ctk.cdi.options import DEFAULT_KINDS

    text = (REPO / "docs/cdi-generate.md").read_text()
    section = text.split("## Differences from nvidia-ctk", 1)[1].split("\n## ", 1)[0]
    differing = {mode: kind for mode, kind in DEFAULT_KINDS.items() if kind != "nvidia.com/gpu"}
    assert differing  # ctk's kinds are deliberate: if they ever match, this test goes
    missing = [f"{mode}: {kind}" for mode, kind in differing.items() if f"`{kind}`" not in section]
    assert missing == []
