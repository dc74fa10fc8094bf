"""The real-world config corpus under tests/fixtures/configs: copy, run, compare whole trees."""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "configs"
ROOT_MARK = "@ROOT@"
UPDATE = os.environ.get("CTK_UPDATE_GOLDEN", "") not in ("", "0")


@dataclass(frozen=True)
class Case:
    """One corpus case."""

    directory: Path

    @property
    def id(self) -> str:
        return f"{self.directory.parent.name}/{self.directory.name}"

    @property
    def engine(self) -> str:
        return self.directory.parent.name

    def args(self, root: Path) -> list[str]:
        text = (self.directory / "args").read_text().replace(ROOT_MARK, str(root))
        return shlex.split(text)

    def unconfigure_args(self, root: Path) -> list[str]:
        """The configure arguments that `unconfigure` takes too (engine, files, name)."""
        args = self.args(root)
        out = []
        for index, arg in enumerate(args):
            if arg.startswith("--drop-in-config="):
                out.append(arg)
            elif arg in ("--runtime", "--config", "--drop-in-config", "--nvidia-runtime-name"):
                out += [arg, args[index + 1]]
        return out

    def install(self, root: Path) -> None:
        """Copy the input tree under ``root``, with @ROOT@ replaced."""
        root.mkdir(parents=True, exist_ok=True)
        source = self.directory / "input"
        for path in sorted(source.rglob("*")):
            target = root / path.relative_to(source)
            if path.is_dir():
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(path.read_text().replace(ROOT_MARK, str(root)))

    def expected_tree(self) -> dict[str, str]:
        return read_tree(self.directory / "expected")

    def input_tree(self) -> dict[str, str]:
        return read_tree(self.directory / "input")

    def expected_text(self, name: str) -> str:
        return (self.directory / name).read_text()

    def update(self, tree: dict[str, str], stdout: str, stderr: str) -> None:
        """Rewrite the golden files (only with CTK_UPDATE_GOLDEN=1)."""
        expected = self.directory / "expected"
        shutil.rmtree(expected, ignore_errors=True)
        for name, text in tree.items():
            target = expected / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        (self.directory / "stdout").write_text(stdout)
        (self.directory / "stderr").write_text(stderr)


def read_tree(root: Path, *, mark: Path | None = None) -> dict[str, str]:
    """Every file under ``root`` by relative path; ``mark``'s path is written as @ROOT@."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            text = path.read_text()
            out[str(path.relative_to(root))] = (
                text.replace(str(mark), ROOT_MARK) if mark is not None else text
            )
    return out


def cases() -> list[Case]:
    return [Case(d) for d in sorted(CORPUS.glob("*/*")) if (d / "args").is_file()]
