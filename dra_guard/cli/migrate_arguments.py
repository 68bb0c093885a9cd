"""The command line of `dra-guard migrate`, cheap to import (the CLI builds it on every run)."""

from __future__ import annotations

import argparse

from dra_guard.contract.catalog import KUBERNETES_VERSIONS, RESOURCE_API_VERSIONS, SANITIZATION_POLICIES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files, directories, globs, or - for stdin")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "-o", "--output", metavar="OUT", help="write here: a file, or a directory (several inputs, or OUT/)"
    )
    where.add_argument(
        "--in-place",
        action="store_true",
        help="rewrite the inputs, keeping each original as <file>.bak (a symlink: its real file, which must lie "
        "in the folder the inputs were named from); refused, writing nothing, where a <file>.bak that differs "
        "exists",
    )
    parser.add_argument("--dry-run", action="store_true", help="print a unified diff; write nothing")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="the report's format")
    parser.add_argument(
        "--kubernetes-version",
        choices=KUBERNETES_VERSIONS,
        help="the release the templates are for (default: the configuration's kubernetes-version)",
    )
    parser.add_argument(
        "--api-version",
        choices=RESOURCE_API_VERSIONS,
        help="the templates' resource.k8s.io version (default: the newest a cluster of that release serves with "
        "--runtime-config)",
    )
    parser.add_argument(
        "--runtime-config",
        action="append",
        default=[],
        metavar="ENTRIES",
        help="your kube-apiserver's --runtime-config (repeatable), e.g. resource.k8s.io/v1beta2=true: a beta or "
        "alpha --api-version needs it, a default cluster serves resource.k8s.io/v1 only",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        metavar="NS",
        help="the namespace objects that name none are applied to (kubectl apply -n NS): their templates are "
        "written for it, since the isolation tag binds the namespace",
    )
    parser.add_argument(
        "--sanitization",
        choices=SANITIZATION_POLICIES,
        default=SANITIZATION_POLICIES[0],
        help="the templates' dra-guard.io/sanitization; ScrubBeforeUse only where the scrubber runs (not with "
        "--no-scrubber, and an object asking for a class it cannot scrub, such as a TPU, is refused)",
    )
    parser.add_argument(
        "--tenant-from-namespace", action="store_true", help="name each workload's namespace as its tenant"
    )
    parser.add_argument("--gpu-product", metavar="NAME", help="productName for nvidia.com/gpu (class gpu.nvidia.com)")
    parser.add_argument("--tpu-gen", metavar="GEN", help="tpuGen for google.com/tpu (class tpu.google.com), e.g. v6e")
    parser.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="CLASS=VALUE",
        help="the pin value for any device class, e.g. gpu.amd.com=cpx_nps4 (repeatable)",
    )
    parser.add_argument("--hmac-key-env", metavar="VAR", help="tag the templates with HMAC-SHA256, key in $VAR")
    scrubber = parser.add_mutually_exclusive_group()
    scrubber.add_argument(
        "--scrub-image",
        metavar="IMAGE",
        help="the scrubber image pods of NVIDIA GPU and MIG claims run first, pinned by tag or digest (default: the "
        "configuration's one scrub-images entry, else ghcr.io/dra-guard/scrub:0.1.0)",
    )
    scrubber.add_argument(
        "--no-scrubber", action="store_true", help="add no scrubber init container (check then reports DRA016)"
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="a .dra-guard.yaml or pyproject.toml (default: found as `check` finds it, from the first PATH up)",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="leave paths matching this .gitignore-style pattern out of directory walks, as `check` does",
    )
    parser.add_argument("--no-ignore", action="store_true", help="do not honour .gitignore files in walks")
