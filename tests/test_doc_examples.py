"""The README's examples are true: every fenced code block of README.md, docs/*.md and
examples/pulumi/README.md is parsed, compiled, checked or run here.

A yaml, python, toml or json block carries a marker, an HTML comment right before it (other
comments may sit between the two), saying what it is:

* `<!-- example: compliant -->`: Kubernetes manifests the engine reports nothing on.
* `<!-- example: findings DRA001 DRA004 -->`: manifests the engine reports each rule on.
* `<!-- example: synth -->`: compliant, and exactly what the `run` block before it synthesizes.
* `<!-- example: config -->`: a dra-guard configuration (`.dra-guard.yaml` or `[tool.dra-guard]`).
* `<!-- example: pulumi-config -->`: a `--policy-pack-config` file naming the pack's policies.
* `<!-- example: run [chart] -->`: Python run as it stands (`chart`: after `app = App()` and
  `chart = Chart(app, ...)`, then `app.synth()`), in a temporary directory.
* `<!-- example: program -->`: a whole Python program (a Pulumi one needs the engine to run):
  compiled, and every name it uses bound by it or a builtin.
* `<!-- example: fragment [NAME ...] -->`: part of something: parsed (Python: compiled, and
  the names it uses but does not bind are the NAMEs).
* `<!-- example: signature -->`: a Python call signature, compiled as a `def`.
* `<!-- example: output -->`: what a program prints: parsed.

sh blocks need none: each `dra-guard ...` command in them must parse with the CLI's own
parser. text and diff blocks are not checked here (tests/test_migrate_cli.py checks the
migrate diff).  docs/rules.md is generated from the rules' examples (tests/test_cli.py) and
tests/test_rule_examples.py checks those: each of its yaml blocks must be one of them.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_guard.cli.main import build_parser
from dra_guard.engine.run import check_objects
from dra_guard.read.config_file import parse_config
from dra_guard.rules import RULES
from testkit.paths import REPO_ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, no-redef, unused-ignore]

DOCUMENTS = [
    "README.md",
    *sorted(f"docs/{p.name}" for p in (REPO_ROOT / "docs").glob("*.md")),
    "examples/pulumi/README.md",
]
UNMARKED_KINDS = {"sh", "text", "diff"}  # languages that need no marker; "" reads as text
MARKED_KINDS = {"yaml", "python", "toml", "json"}
KINDS = {
    "compliant",
    "findings",
    "synth",
    "config",
    "pulumi-config",
    "run",
    "program",
    "fragment",
    "signature",
    "output",
}
RUN_PRELUDES = {
    "chart": 'from cdk8s import App, Chart\napp = App()\nchart = Chart(app, "docs", namespace="tenant-a")\n'
}
ENVIRON = {"DRA_GUARD_HMAC_KEY": "an example key of the docs, long enough"}

_FENCE = re.compile(r"^([ \t]*)```([\w-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*example:\s*(.*?)\s*-->\s*$")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")


@dataclass(frozen=True)
class Block:
    path: str
    line: int  # of the opening fence, 1-based
    language: str
    text: str
    marker: tuple[str, ...] | None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def extract(markdown: str, path: str) -> list[Block]:
    """The fenced code blocks of `markdown`, dedented to their fence, with their markers."""
    lines = markdown.splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if not fence:
            index += 1
            continue
        indent, language = fence.groups()
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        body = [line[len(indent) :] if line.startswith(indent) else line.lstrip() for line in lines[index + 1 : end]]
        marker = None
        before = index - 1
        while before >= 0 and _COMMENT.match(lines[before]):
            found = _MARKER.match(lines[before])
            if found:
                marker = tuple(found.group(1).split())
                break
            before -= 1
        blocks.append(Block(path, index + 1, language or "text", "\n".join(body) + "\n", marker))
        index = end + 1
    return blocks


def documents() -> Iterator[Block]:
    for path in DOCUMENTS:
        yield from extract((REPO_ROOT / path).read_text(encoding="utf-8"), path)


BLOCKS = list(documents())


def names(source: str) -> tuple[set[str], set[str]]:
    """The names `source` reads, and those it binds."""
    tree = ast.parse(source)
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return read, bound


def free_names(source: str) -> set[str]:
    """Names `source` reads that it never binds and Python does not provide."""
    read, bound = names(source)
    return read - bound - set(dir(builtins))


def dra_guard_commands(script: str) -> Iterator[list[str]]:
    """Each `dra-guard ...` command of a shell script, as argv after `dra-guard`."""
    for line in script.replace("\\\n", " ").splitlines():
        words = [re.sub(r"<[^<>]+>", "placeholder", word) for word in shlex.split(line, comments=True)]
        command: list[str] = []
        for word in [*words, "|"]:
            if word in {"|", "&&", ";", ">", "<"}:
                if command and command[0] == "dra-guard":
                    yield command[1:]
                command = [] if word != ">" else ["redirected"]
            elif command == ["redirected"]:
                command = ["after-redirection"]
            else:
                command.append(word)


def parse_command(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """None, or why argparse refuses `argv`."""
    try:
        parser.parse_args(argv)
    except SystemExit as refused:
        return f"`dra-guard {shlex.join(argv)}` does not parse (exit {refused.code})"
    return None


def rule_example_manifests() -> set[str]:
    return {example.manifests.strip() for rule in RULES.values() for example in rule.examples}


def policy_names() -> set[str]:
    from pulumi_dra.policies import build_policies

    return {policy.name for policy in build_policies()}


def problems(block: Block, rules_md: bool = False) -> list[str]:
    """What is wrong with `block`, checked in this process (running `run` blocks aside)."""
    where = str(block)
    language, marker = block.language, block.marker
    if language in UNMARKED_KINDS and marker is None:
        if language != "sh":
            return []
        parser = build_parser()
        return [f"{where}: {why}" for argv in dra_guard_commands(block.text) if (why := parse_command(parser, argv))]
    if rules_md and language == "yaml" and marker is None:
        if block.text.strip() in rule_example_manifests():
            return []
        return [f"{where}: not one of the rules' examples (docs/rules.md is generated: run `make docs`)"]
    if language not in MARKED_KINDS:
        return [f"{where}: a {language!r} block, which this test does not know"]
    if marker is None:
        return [f"{where}: a {language} block without an <!-- example: ... --> marker"]
    kind, arguments = marker[0], list(marker[1:])
    if kind not in KINDS:
        return [f"{where}: unknown marker kind {kind!r}"]
    try:
        if language == "python":
            return [f"{where}: {why}" for why in python_problems(block.text, kind, arguments)]
        data: list[Any]
        if language == "yaml":
            data = [obj for obj in yaml.safe_load_all(block.text) if obj is not None]
        elif language == "toml":
            data = [tomllib.loads(block.text)]
        else:
            data = [json.loads(block.text)]
    except (SyntaxError, yaml.YAMLError, tomllib.TOMLDecodeError, json.JSONDecodeError) as error:
        return [f"{where}: does not parse: {error}"]
    return [f"{where}: {why}" for why in data_problems(data, language, kind, arguments, where)]


def python_problems(source: str, kind: str, arguments: list[str]) -> list[str]:
    if kind == "signature":
        compile(f"def {source.strip()}: ...", "<signature>", "exec")
        return []
    if kind not in {"run", "program", "fragment"}:
        return [f"marker {kind!r} does not fit a python block"]
    compile(source, "<block>", "exec")
    allowed = set(arguments)
    if kind == "run":
        if not set(arguments) <= set(RUN_PRELUDES):
            return [f"no prelude {', '.join(sorted(set(arguments) - set(RUN_PRELUDES)))}"]
        allowed = {name for prelude in arguments for name in names(RUN_PRELUDES[prelude])[1]}
    unbound = free_names(source) - allowed
    return [f"uses {', '.join(sorted(unbound))}, which it does not define or import"] if unbound else []


def data_problems(data: list[Any], language: str, kind: str, arguments: list[str], where: str) -> list[str]:
    if kind in {"fragment", "output"}:
        return []
    if kind == "config":
        options = data[0]["tool"]["dra-guard"] if language == "toml" else data[0]
        parse_config(options, RULES, where, environ=ENVIRON, directory=str(REPO_ROOT))
        return []
    if kind == "pulumi-config":
        unknown = set(data[0]) - policy_names()
        return [f"names no policy of the pack: {', '.join(sorted(unknown))}"] if unknown else []
    if language != "yaml" or kind not in {"compliant", "synth", "findings"}:
        return [f"marker {kind!r} does not fit a {language} block"]
    report = check_objects(data)
    found = sorted({finding.rule for finding in report.findings})
    errors = [f"input error: {error}" for error in report.errors]
    if kind == "findings":
        missing = sorted(set(arguments) - set(found))
        return errors + ([f"presented with {', '.join(missing)}, which the engine does not report"] if missing else [])
    return errors + ([f"presented as compliant, but the engine reports {', '.join(found)}"] if found else [])


@pytest.mark.parametrize("block", BLOCKS, ids=str)
def test_block(block: Block) -> None:
    assert problems(block, rules_md=block.path == "docs/rules.md") == []


def test_every_fence_is_a_block() -> None:
    for path in DOCUMENTS:
        fences = [
            line
            for line in (REPO_ROOT / path).read_text(encoding="utf-8").splitlines()
            if line.strip().startswith("```")
        ]
        assert len(fences) == 2 * len([block for block in BLOCKS if block.path == path]), path


def test_the_checks_cover_every_kind() -> None:
    languages = {block.language for block in BLOCKS}
    assert languages <= UNMARKED_KINDS | MARKED_KINDS
    kinds = {block.marker[0] for block in BLOCKS if block.marker}
    assert {"run", "synth", "config", "program", "fragment"} <= kinds
    assert any(list(dra_guard_commands(block.text)) for block in BLOCKS if block.language == "sh")


BAD = """\
# A bad page

<!-- example: compliant -->
```yaml
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: team-a}
spec:
  containers:
  - name: main
    image: pytorch
    resources:
      limits: {nvidia.com/gpu: 1}
```

```python
print("no marker")
```

<!-- example: program -->
```python
pulumi.export("name", "value")
```

<!-- example: findings DRA004 -->
```yaml
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: team-a}
spec:
  containers:
  - {name: main, image: pytorch, resources: {limits: {nvidia.com/gpu: 1}}}
```

```sh
dra-guard check --no-such-flag k8s/
helm template x ./chart | dra-guard chek -
```
"""


def test_the_classifier_reports_bad_examples(capsys: pytest.CaptureFixture[str]) -> None:
    reported = [problem for block in extract(BAD, "bad.md") for problem in problems(block)]
    capsys.readouterr()  # argparse's usage messages
    assert reported == [
        "bad.md:4: presented as compliant, but the engine reports DRA001",
        "bad.md:16: a python block without an <!-- example: ... --> marker",
        "bad.md:21: uses pulumi, which it does not define or import",
        "bad.md:26: presented with DRA004, which the engine does not report",
        "bad.md:35: `dra-guard check --no-such-flag k8s/` does not parse (exit 2)",
        "bad.md:35: `dra-guard chek -` does not parse (exit 2)",
    ]


def test_a_block_not_of_the_rules_examples_is_reported() -> None:
    block = Block("docs/rules.md", 1, "yaml", "kind: Pod\n", None)
    assert problems(block, rules_md=True) == [
        "docs/rules.md:1: not one of the rules' examples (docs/rules.md is generated: run `make docs`)"
    ]


PULUMI_POLICIES = re.compile(
    r"<!-- pulumi-policies: generated from pulumi_dra.policies.build_policies\(\) by tests/test_doc_examples.py -->\n"
    r"(.*?)<!-- /pulumi-policies -->",
    re.DOTALL,
)


def render_pulumi_policies() -> str:
    from pulumi_dra.policies import build_policies

    return "".join(
        f"* `{policy.name}` ({policy.enforcement_level and policy.enforcement_level.value})\n"
        for policy in build_policies()
    )


def test_the_pulumi_example_lists_every_policy() -> None:
    readme = (REPO_ROOT / "examples" / "pulumi" / "README.md").read_text(encoding="utf-8")
    match = PULUMI_POLICIES.search(readme)
    assert match, "examples/pulumi/README.md lost its pulumi-policies markers"
    assert match.group(1) == render_pulumi_policies()


def pod_specs(node: object) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list):
            yield node
        for value in node.values():
            yield from pod_specs(value)
    elif isinstance(node, list):
        for item in node:
            yield from pod_specs(item)


RUN_BLOCKS = [block for block in BLOCKS if block.marker and block.marker[0] == "run"]


@pytest.mark.e2e  # a Python of its own, and cdk8s's jsii runtime starts node
@pytest.mark.parametrize("block", RUN_BLOCKS, ids=str)
def test_run_block(block: Block, tmp_path: Path) -> None:
    # In a process of its own: the jsii runtime's node keeps the directory it started in,
    # and `App()` writes dist/ there.
    assert block.marker is not None
    preludes = block.marker[1:]
    script = "".join(RUN_PRELUDES[name] for name in preludes) + block.text + ("app.synth()\n" if preludes else "")
    (tmp_path / "example.py").write_text(script, encoding="utf-8")
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "example.py"],
        check=False,
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{block} fails:\n{done.stderr}"
    objects = [
        obj
        for manifest in sorted((tmp_path / "dist").glob("*.k8s.yaml"))
        for obj in yaml.safe_load_all(manifest.read_text(encoding="utf-8"))
        if obj is not None
    ]
    assert objects, "synthesized nothing"
    for spec in pod_specs(objects):
        names = [c["name"] for key in ("initContainers", "containers") for c in spec.get(key, [])]
        assert len(names) == len(set(names)), f"{block}: container names repeat: {names} (the API server refuses it)"
    following = BLOCKS[BLOCKS.index(block) + 1]
    if following.marker and following.marker[0] == "synth":
        shown = [obj for obj in yaml.safe_load_all(following.text) if obj is not None]
        assert shown == objects, f"{following} is not what {block} synthesizes"
