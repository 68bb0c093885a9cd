"""The webhook's image (Dockerfile) runs what the generated Deployment asks of it: a pinned
base, the Deployment's non-root user, `dra-guard webhook` as its command and args, the
ports its containers name; and docker/webhook-constraints.txt, which pins the image's
dependencies, still satisfies what pyproject.toml declares.  (The image is not built here:
that needs a registry.)"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from dra_guard import __version__
from dra_guard.admission.deploy import RUN_AS, AdmissionGuardSpec, WebhookDeployment, admission_guard_objects
from testkit.paths import REPO_ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

DOCKERFILE = REPO_ROOT / "Dockerfile"
CONSTRAINTS = REPO_ROOT / "docker" / "webhook-constraints.txt"
CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
IMAGE = f"registry.example/dra-guard-webhook:{__version__}"  # as the Dockerfile says to tag it


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions, (KEYWORD, arguments), continuation lines joined."""
    joined = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    found = []
    for line in joined.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            keyword, _, rest = line.strip().partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def only(keyword: str) -> str:
    values = [rest for found, rest in instructions() if found == keyword]
    assert len(values) == 1, f"one {keyword} expected, got {values}"
    return values[0]


@pytest.fixture(scope="module")
def container() -> dict[str, Any]:
    spec = AdmissionGuardSpec(
        webhook=WebhookDeployment(image=IMAGE, namespace="dra-guard", tls_secret="dra-guard-tls", ca_bundle=CA_PEM)
    )
    (deployment,) = [obj for obj in admission_guard_objects(spec) if obj["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == RUN_AS
    (webhook,) = pod["containers"]
    assert webhook["image"] == IMAGE
    return dict(webhook)


def test_the_base_image_is_pinned_by_digest_or_exact_tag() -> None:
    base = only("FROM")
    digest = re.fullmatch(r"[\w./-]+@sha256:[0-9a-f]{64}", base)
    exact_tag = re.fullmatch(r"[\w./-]+:\d+\.\d+\.\d+[\w.-]*", base)
    assert digest or exact_tag, f"FROM {base}: pin it by digest or by an exact version tag"
    assert "slim" in base


def test_the_user_is_the_deployments_non_root_user() -> None:
    user = only("USER")
    assert user == f"{RUN_AS}:{RUN_AS}"
    assert RUN_AS != 0


def test_the_entrypoint_and_cmd_are_what_the_deployment_runs(container: dict[str, Any]) -> None:
    entrypoint, cmd = json.loads(only("ENTRYPOINT")), json.loads(only("CMD"))
    # Kubernetes: `command` replaces ENTRYPOINT, `args` replaces CMD.
    assert entrypoint == container["command"] == ["dra-guard"]
    assert cmd == container["args"][:1] == ["webhook"]


def test_the_exposed_ports_are_the_containers_ports(container: dict[str, Any]) -> None:
    exposed = {int(port.split("/")[0]) for port in only("EXPOSE").split()}
    assert exposed == {port["containerPort"] for port in container["ports"]}


def test_the_install_is_the_checkout_with_the_webhook_extra_and_the_constraints() -> None:
    install = next(rest for keyword, rest in instructions() if keyword == "RUN" and "pip install" in rest)
    assert "-c /src/docker/webhook-constraints.txt" in install
    assert "'/src[webhook]'" in install
    assert only("COPY") == ". /src"


def test_the_documented_build_tags_this_version() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    command = f"docker build -t <your-registry>/dra-guard-webhook:{__version__} ."
    assert command in text
    assert command in (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def _constraints() -> tuple[str, dict[str, Version]]:
    python, pins = "", {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        if line.startswith("# python:"):
            python = line.split(":", 1)[1].strip()
        elif line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"{line}: pin an exact version (name==version)"
            assert canonicalize_name(name) == name and name not in pins, line
            pins[name] = Version(version)
    assert python, "the constraints name the Python they were generated for"
    return python, pins


def test_the_constraints_are_for_the_base_images_python() -> None:
    python, _ = _constraints()
    match = re.match(r"[\w./-]*python:(\d+\.\d+)\.", only("FROM"))
    assert match is not None and match.group(1) == python


def test_the_constraints_satisfy_pyproject() -> None:
    """Stale constraints fail here: each requirement of `dra-guard[webhook]` that pyproject
    declares (for the image's Python) is pinned, at a version its specifier allows.
    Regenerate: python tools/webhook_constraints.py > docker/webhook-constraints.txt"""
    python, pins = _constraints()
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    environment = {"python_version": python, "python_full_version": f"{python}.0", "extra": ""}
    declared = [Requirement(text) for text in [*project["dependencies"], *project["optional-dependencies"]["webhook"]]]
    assert {"uvicorn", "kubernetes", "cryptography"} <= {requirement.name for requirement in declared}
    for requirement in declared:
        if requirement.marker is not None and not requirement.marker.evaluate(environment):
            continue
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement}: not pinned in {CONSTRAINTS.name}"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{name}=={pins[name]} does not satisfy pyproject's {requirement}: regenerate {CONSTRAINTS.name}"
        )
