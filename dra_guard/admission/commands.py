"""`dra-guard admission-policy` and `dra-guard webhook`: their arguments and what they do."""

from __future__ import annotations

import argparse
import re
from typing import Any, TextIO

ENFORCEMENT_CHOICES = ("Deny", "Warn", "Audit")
_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)?")
_LABEL = re.compile(r"([^=\s]+)=([^=\s]*)")
EXIT_CLEAN, EXIT_ERROR = 0, 2


def add_admission_policy_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "admission-policy",
        help="print ValidatingAdmissionPolicies (and a webhook configuration) that enforce the rules in the cluster",
        description="Print ValidatingAdmissionPolicy and Binding objects, generated from the rules, as YAML.",
    )
    parser.add_argument("--enforcement", choices=ENFORCEMENT_CHOICES, default="Deny", help="binding action")
    parser.add_argument("--kubernetes-version", default="1.36", metavar="V", help="target release (default 1.36)")
    parser.add_argument(
        "--admin-namespace-label",
        metavar="KEY=VALUE",
        help="namespaces with this label may use adminAccess (in addition to admin-namespaces in the config)",
    )
    parser.add_argument("--name", default="dra-guard", metavar="PREFIX", help="name prefix of the objects")
    parser.add_argument("--config", metavar="FILE", help="a .dra-guard.yaml or pyproject.toml (default: discovered)")
    parser.add_argument("--webhook", metavar="URL", help="also emit a ValidatingWebhookConfiguration for this URL")
    parser.add_argument("--ca-bundle", metavar="FILE", help="PEM CA certificate of the webhook's serving certificate")


def _version(text: str) -> tuple[int, int]:
    match = _VERSION.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"--kubernetes-version: {text!r} is not a version such as 1.36")
    return int(match.group(1)), int(match.group(2))


def _label(text: str | None) -> tuple[str, str] | None:
    if text is None:
        return None
    match = _LABEL.fullmatch(text)
    if match is None:
        raise ValueError(f"--admin-namespace-label: {text!r} is not KEY=VALUE")
    return match.group(1), match.group(2)


def run_admission_policy(arguments: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    import yaml

    from dra_guard.admission.policy import admission_objects, webhook_configuration
    from dra_guard.celkit import AdmissionTarget
    from dra_guard.config import ConfigError, discover_config, load_config_file
    from dra_guard.rules import RULES

    try:
        version = _version(arguments.kubernetes_version)
        label = _label(arguments.admin_namespace_label)
        config = load_config_file(arguments.config, RULES) if arguments.config else discover_config(".", RULES)
        ca_bundle = None
        if arguments.webhook is not None:
            if arguments.ca_bundle is None:
                raise ValueError("--webhook needs --ca-bundle (the CA that signed the webhook's certificate)")
            with open(arguments.ca_bundle, "rb") as handle:
                ca_bundle = handle.read()
        elif arguments.ca_bundle is not None:
            raise ValueError("--ca-bundle is only used with --webhook")
    except (ValueError, ConfigError) as error:
        stderr.write(f"dra-guard: {error}\n")
        return EXIT_ERROR
    except OSError as error:
        stderr.write(f"dra-guard: cannot read {arguments.ca_bundle}: {error.strerror or error}\n")
        return EXIT_ERROR
    target = AdmissionTarget(config, version, label)
    objects = admission_objects(RULES, target, enforcement=arguments.enforcement, prefix=arguments.name)
    if arguments.webhook is not None and ca_bundle is not None:
        objects.append(webhook_configuration({"url": arguments.webhook}, ca_bundle, prefix=arguments.name))
    stdout.write(yaml.safe_dump_all(objects, sort_keys=False, width=120, allow_unicode=True))
    return EXIT_CLEAN


def add_webhook_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "webhook",
        help="serve the validating admission webhook (HMAC tags, cross-object rules) over HTTPS",
        description="Serve AdmissionReview admission.k8s.io/v1 at /validate, with /healthz and /readyz.",
    )
    parser.add_argument("--tls-cert", required=True, metavar="FILE", help="PEM serving certificate")
    parser.add_argument("--tls-key", required=True, metavar="FILE", help="PEM private key")
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    parser.add_argument("--port", type=int, default=8443, help="port (default 8443)")
    parser.add_argument("--hmac-key-file", metavar="FILE", help="the isolation-tag HMAC key (a Secret mount)")
    parser.add_argument("--config", metavar="FILE", help="a .dra-guard.yaml (default: none)")
    parser.add_argument("--fail-on", choices=("critical", "high", "medium", "low"), default="medium")
    parser.add_argument(
        "--all-rules", action="store_true", help="deny on every finding, not only what the policies cannot decide"
    )
    parser.add_argument("--max-body", type=int, default=None, metavar="BYTES", help="largest review accepted")
    parser.add_argument(
        "--in-cluster",
        action="store_true",
        help="read the namespace's ResourceClaimTemplates with the pod's service account",
    )


#: Where a pod's service account credentials are mounted.
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def run_webhook(arguments: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    import logging
    import os

    from dra_guard.admission.webhook import DEFAULT_MAX_BODY, KubernetesTemplates, NoTemplates, TemplateSource, Webhook
    from dra_guard.config import Config, ConfigError, load_config_file, parse_config
    from dra_guard.findings import Severity
    from dra_guard.rules import RULES

    try:
        config = load_config_file(arguments.config, RULES) if arguments.config else Config()
        if arguments.hmac_key_file is not None:
            with open(arguments.hmac_key_file, "rb") as handle:
                key = handle.read().strip()
            if not key:
                raise ValueError(f"--hmac-key-file: {arguments.hmac_key_file} is empty")
            # The key goes through the one config parser, as an in-memory environment.
            keyed = parse_config(
                {"hmac-key-env": "DRA_GUARD_WEBHOOK_KEY"}, RULES, "webhook", environ={"DRA_GUARD_WEBHOOK_KEY": key}
            )
            config = Config({**config.values, **keyed.values}, config.source)
        templates: TemplateSource = NoTemplates()
        if arguments.in_cluster:
            host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
            if not host:
                raise ValueError("--in-cluster: KUBERNETES_SERVICE_HOST is not set (not running in a pod?)")
            with open(f"{SERVICE_ACCOUNT}/token", encoding="utf-8") as handle:
                token = handle.read().strip()
            templates = KubernetesTemplates(f"https://{host}:{port}", token, f"{SERVICE_ACCOUNT}/ca.crt")
    except (ValueError, ConfigError) as error:
        stderr.write(f"dra-guard: {error}\n")
        return EXIT_ERROR
    except OSError as error:
        stderr.write(f"dra-guard: {error.filename}: {error.strerror or error}\n")
        return EXIT_ERROR
    try:
        import uvicorn
    except ImportError:
        stderr.write("dra-guard: the webhook needs uvicorn: pip install 'dra-guard[webhook]'\n")
        return EXIT_ERROR
    handler = logging.StreamHandler(stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log = logging.getLogger("dra_guard.webhook")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    app = Webhook(
        RULES,
        config,
        templates=templates,
        fail_on=Severity.parse(arguments.fail_on),
        all_rules=arguments.all_rules,
        max_body=arguments.max_body or DEFAULT_MAX_BODY,
    )
    uvicorn.run(
        app,
        host=arguments.host,
        port=arguments.port,
        ssl_certfile=arguments.tls_cert,
        ssl_keyfile=arguments.tls_key,
        log_config=None,
        access_log=False,
        timeout_keep_alive=5,
        limit_concurrency=512,
        lifespan="on",
    )
    return EXIT_CLEAN
