"""`dra-guard admission-policy` and `dra-guard webhook`: their arguments and what they do."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

ENFORCEMENT_CHOICES = ("Deny", "Warn", "Audit")
EXIT_CLEAN, EXIT_ERROR = 0, 2
#: As in dra_guard.admission.policy (not imported here: `dra-guard --help` stays cheap).
WEBHOOK_NAMESPACE_MODES = ("all", "opt-in")
WEBHOOK_FAILURE_POLICIES = ("Fail", "Ignore")
WEBHOOK_OPT_IN_LABEL = ("dra-guard.io/enforce", "true")


def add_admission_policy_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "admission-policy",
        help="print ValidatingAdmissionPolicies (and a webhook configuration) that enforce the rules in the cluster",
        description="Print ValidatingAdmissionPolicy and Binding objects, generated from the rules, as YAML.",
    )
    parser.add_argument("--enforcement", choices=ENFORCEMENT_CHOICES, default="Deny", help="binding action")
    parser.add_argument(
        "--kubernetes-version", metavar="V", help="target release (default: the config's kubernetes-version, else 1.36)"
    )
    parser.add_argument(
        "--admin-namespace-label",
        metavar="KEY=VALUE",
        help="namespaces with this label may use adminAccess (in addition to admin-namespaces in the config)",
    )
    parser.add_argument("--name", default="dra-guard", metavar="PREFIX", help="name prefix of the objects")
    parser.add_argument("--config", metavar="FILE", help="a .dra-guard.yaml or pyproject.toml (default: discovered)")
    parser.add_argument(
        "--claim-writer",
        dest="claim_writers",
        action="append",
        metavar="USERNAME",
        help="a user whose writes of ResourceClaims are not checked (the control plane's claim writers); repeat "
        "for each; replaces the config's admission-claim-writers (default: the resource-claim controller, "
        "kube-controller-manager, kube-scheduler)",
    )
    parser.add_argument("--webhook", metavar="URL", help="also emit a ValidatingWebhookConfiguration for this URL")
    parser.add_argument("--ca-bundle", metavar="FILE", help="PEM CA certificate of the webhook's serving certificate")
    deploy = parser.add_argument_group(
        "the webhook in the cluster",
        "With --deploy-webhook, also print the objects that run `dra-guard webhook` in the cluster "
        "(ServiceAccount, RBAC, ConfigMap, Service, Deployment, PodDisruptionBudget) and its "
        "ValidatingWebhookConfiguration, the same objects as the AdmissionGuard constructs.",
    )
    deploy.add_argument("--deploy-webhook", action="store_true", help="also print the in-cluster webhook")
    deploy.add_argument(
        "--webhook-image", metavar="IMAGE", help="an image with dra-guard[webhook] installed (none is published)"
    )
    deploy.add_argument("--webhook-namespace", metavar="NS", help="an existing namespace to run the webhook in")
    deploy.add_argument("--tls-secret", metavar="NAME", help="kubernetes.io/tls Secret with the serving certificate")
    deploy.add_argument("--hmac-key-secret", metavar="NAME", help="Secret whose 'hmac-key' is the tag key")
    deploy.add_argument("--webhook-replicas", type=int, default=2, metavar="N", help="webhook pods (default 2)")
    sent = parser.add_argument_group(
        "what the API server sends the webhook", "With --webhook or --deploy-webhook (docs/admission.md)."
    )
    sent.add_argument(
        "--webhook-namespaces",
        choices=WEBHOOK_NAMESPACE_MODES,
        help="all: every namespace but kube-system and the webhook's own (default); opt-in: only namespaces "
        "with --webhook-namespace-label",
    )
    sent.add_argument(
        "--webhook-namespace-label",
        metavar="KEY=VALUE",
        help=f"the label that opts a namespace in (default {'='.join(WEBHOOK_OPT_IN_LABEL)})",
    )
    sent.add_argument(
        "--webhook-failure-policy",
        choices=WEBHOOK_FAILURE_POLICIES,
        help="Fail (default): refuse what the webhook cannot review; Ignore: admit it unreviewed by the webhook",
    )


#: The CLI's flag for each argument of AdmissionGuardSpec / WebhookDeployment, so a
#: validation message names what the user typed.
FLAGS = {
    "enforcement": "--enforcement",
    "kubernetes_version": "--kubernetes-version",
    "admin_namespace_label": "--admin-namespace-label",
    "name_prefix": "--name",
    "config": "--config",
    "claim_writers": "--claim-writer",
    "webhook": "--deploy-webhook",
    "image": "--webhook-image",
    "namespace": "--webhook-namespace",
    "tls_secret": "--tls-secret",
    "hmac_key_secret": "--hmac-key-secret",
    "webhook.hmac_key_secret": "--hmac-key-secret",
    "replicas": "--webhook-replicas",
    "ca_bundle": "--ca-bundle",
    "namespaces": "--webhook-namespaces",
    "namespace_label": "--webhook-namespace-label",
    "failure_policy": "--webhook-failure-policy",
}
#: What --deploy-webhook needs, by destination.
_DEPLOY_REQUIRED = ("webhook_image", "webhook_namespace", "tls_secret", "ca_bundle")
_DEPLOY_ONLY = ("webhook_image", "webhook_namespace", "tls_secret", "hmac_key_secret")
#: What either --webhook or --deploy-webhook takes, and where WebhookDeployment has it.
_WEBHOOK_SETTINGS = {
    "webhook_namespaces": "namespaces",
    "webhook_namespace_label": "namespace_label",
    "webhook_failure_policy": "failure_policy",
}


def _flagged(message: str) -> str:
    """`image: must be ...` -> `--webhook-image: must be ...`."""
    argument, colon, rest = message.partition(": ")
    return f"{FLAGS[argument]}: {rest}" if colon and argument in FLAGS else message


def _flag(destination: str) -> str:
    return "--" + destination.replace("_", "-")


def _deploy_arguments_problem(arguments: argparse.Namespace) -> str | None:
    if arguments.deploy_webhook:
        if arguments.webhook is not None:
            return "--webhook URL and --deploy-webhook both say where the webhook is; use one"
        missing = [_flag(name) for name in _DEPLOY_REQUIRED if getattr(arguments, name) is None]
        if missing:
            return f"--deploy-webhook needs {', '.join(missing)}"
        return None
    stray = [_flag(name) for name in _DEPLOY_ONLY if getattr(arguments, name) is not None]
    if stray:
        return f"{', '.join(stray)}: only used with --deploy-webhook"
    if arguments.webhook is None:
        unused = [_flag(name) for name in _WEBHOOK_SETTINGS if getattr(arguments, name) is not None]
        if unused:
            return f"{', '.join(unused)}: only used with --webhook or --deploy-webhook"
    if arguments.webhook is not None and arguments.ca_bundle is None:
        return "--webhook needs --ca-bundle (the CA that signed the webhook's certificate)"
    if arguments.webhook is None and arguments.ca_bundle is not None:
        return "--ca-bundle is only used with --webhook or --deploy-webhook"
    return None


def run_admission_policy(arguments: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    import yaml

    from dra_guard.admission.deploy import (
        AdmissionGuardSpec,
        WebhookDeployment,
        admission_guard_objects,
        parse_opt_in_label,
    )
    from dra_guard.admission.policy import webhook_configuration
    from dra_guard.read.config_file import discover_config, load_config_file
    from dra_guard.ruleapi.config import ADMISSION_CLAIM_WRITERS, ConfigError
    from dra_guard.rules import RULES

    try:
        problem = _deploy_arguments_problem(arguments)
        if problem is not None:
            raise ValueError(problem)
        config = load_config_file(arguments.config, RULES) if arguments.config else discover_config(".", RULES)
        ca_bundle = None
        if arguments.ca_bundle is not None:
            with open(arguments.ca_bundle, "rb") as handle:
                ca_bundle = handle.read()
        # Only what was given: WebhookDeployment has the defaults.
        settings = {
            setting: getattr(arguments, name)
            for name, setting in _WEBHOOK_SETTINGS.items()
            if getattr(arguments, name) is not None
        }
        webhook = None
        if arguments.deploy_webhook and ca_bundle is not None:
            webhook = WebhookDeployment(
                image=arguments.webhook_image,
                namespace=arguments.webhook_namespace,
                tls_secret=arguments.tls_secret,
                ca_bundle=ca_bundle,
                hmac_key_secret=arguments.hmac_key_secret,
                replicas=arguments.webhook_replicas,
                **settings,
            )
        spec = AdmissionGuardSpec(
            enforcement=arguments.enforcement,
            kubernetes_version=arguments.kubernetes_version,
            admin_namespace_label=arguments.admin_namespace_label,
            name_prefix=arguments.name,
            config=config,
            claim_writers=arguments.claim_writers,
            webhook=webhook,
        )
        label = parse_opt_in_label(settings.get("namespace_label", "=".join(WEBHOOK_OPT_IN_LABEL)))
    except ConfigError as error:
        stderr.write(f"dra-guard: {error}\n")
        return EXIT_ERROR
    except ValueError as error:
        stderr.write(f"dra-guard: {_flagged(str(error))}\n")
        return EXIT_ERROR
    except OSError as error:
        stderr.write(f"dra-guard: cannot read {arguments.ca_bundle}: {error.strerror or error}\n")
        return EXIT_ERROR
    objects = admission_guard_objects(spec, RULES)
    writers: tuple[str, ...] = spec.parsed_config.get(ADMISSION_CLAIM_WRITERS)
    if arguments.webhook is not None and ca_bundle is not None:
        objects.append(
            webhook_configuration(
                {"url": arguments.webhook},
                ca_bundle,
                prefix=spec.name_prefix,
                namespaces=settings.get("namespaces", "all"),
                namespace_label=label,
                failure_policy=settings.get("failure_policy", "Fail"),
                claim_writers=writers,
            )
        )
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


def run_webhook(arguments: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    import logging
    import os

    from dra_guard.admission.webhook import DEFAULT_MAX_BODY, KubernetesTemplates, NoTemplates, TemplateSource, Webhook
    from dra_guard.contract.findings import Severity
    from dra_guard.read.config_file import load_config_file, parse_config
    from dra_guard.ruleapi.config import Config, ConfigError
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
            if not os.environ.get("KUBERNETES_SERVICE_HOST"):
                raise ValueError("--in-cluster: KUBERNETES_SERVICE_HOST is not set (not running in a pod?)")
            try:
                import kubernetes  # noqa: F401 - only to say what is missing
            except ImportError:
                raise ValueError("--in-cluster needs the kubernetes client: pip install 'dra-guard[webhook]'") from None
            try:
                templates = KubernetesTemplates.in_cluster()
            except ValueError as error:
                raise ValueError(f"--in-cluster: {error}") from None
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
