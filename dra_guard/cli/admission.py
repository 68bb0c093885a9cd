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
    deploy.add_argument(
        "--webhook-runtime-config",
        action="append",
        metavar="ENTRIES",
        help="your kube-apiserver's --runtime-config (repeatable), e.g. resource.k8s.io/v1beta2=true: the webhook "
        "reads claim templates in the newest version the cluster then serves (needed for 1.33, which serves none "
        "by default)",
    )
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
    "runtime_config": "--webhook-runtime-config",
    "webhook.runtime_config": "--webhook-runtime-config",
}
#: What --deploy-webhook needs, by destination.
_DEPLOY_REQUIRED = ("webhook_image", "webhook_namespace", "tls_secret", "ca_bundle")
_DEPLOY_ONLY = ("webhook_image", "webhook_namespace", "tls_secret", "hmac_key_secret", "webhook_runtime_config")
#: What either --webhook or --deploy-webhook takes, and where WebhookDeployment has it.
_WEBHOOK_SETTINGS = {
    "webhook_namespaces": "namespaces",
    "webhook_namespace_label": "namespace_label",
    "webhook_failure_policy": "failure_policy",
}


def _flagged(message: str) -> str:
    """`image: must be ...` -> `--webhook-image: must be ...`; `runtime_config[0]: ...` (an
    entry of a repeated flag) -> `--webhook-runtime-config #1: ...`."""
    argument, colon, rest = message.partition(": ")
    name, bracket, index = argument.partition("[")
    if colon and name in FLAGS:
        return f"{FLAGS[name]} #{int(index.rstrip(']')) + 1}: {rest}" if bracket else f"{FLAGS[name]}: {rest}"
    return message


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


def _unverified_hmac_problem(arguments: argparse.Namespace, hmac_key_env: object) -> str | None:
    """Why a configuration with `hmac-key-env` (its value: `hmac_key_env`) is refused, or
    None: the policies then accept only hmac-sha256: tags, and only the webhook can verify
    one (CEL has no SHA-256), so without a webhook a forged tag of the right form passes
    them while they seem to demand the key.  --deploy-webhook without the key's Secret is
    refused by AdmissionGuardSpec; a --webhook URL is one the user runs, with the key."""
    if not hmac_key_env or arguments.deploy_webhook or arguments.webhook is not None:
        return None
    return (
        "the configuration's hmac-key-env makes the policies require hmac-sha256: isolation tags, which only "
        "the webhook can verify, and no webhook is printed: add --deploy-webhook with --hmac-key-secret (or "
        "--webhook URL for a `dra-guard webhook --hmac-key-file`), or generate the policies from a "
        "configuration without hmac-key-env"
    )


def run_admission_policy(arguments: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    import yaml

    from dra_guard.admission.deploy import (
        HMAC_KEY_OPTION,
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
        problem = _unverified_hmac_problem(arguments, config.values.get(HMAC_KEY_OPTION))
        if problem is not None:
            raise ValueError(problem)
        ca_bundle = None
        if arguments.ca_bundle is not None:
            ca_bundle = _ca_bundle(arguments.ca_bundle)
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
                runtime_config=arguments.webhook_runtime_config,
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


#: The most a CA bundle may be: a few certificates are a few KiB.
_CA_BUNDLE_BYTES = 1 << 20


def _ca_bundle(path: str) -> bytes:
    """The PEM CA bundle at `path`: a regular file (a FIFO would block the command for good),
    holding a certificate; ValueError saying what is wrong otherwise (OSError: unreadable)."""
    from dra_guard.admission.deploy import PEM_CERTIFICATE
    from dra_guard.read.files import Refused, TooLarge, read_regular

    try:
        data = read_regular(path, _CA_BUNDLE_BYTES)
    except TooLarge:
        raise ValueError(f"--ca-bundle {path}: more than {_CA_BUNDLE_BYTES:,} bytes, which no CA bundle is") from None
    except Refused as refused:
        raise ValueError(f"--ca-bundle {path}: {refused.reason}") from None
    if PEM_CERTIFICATE not in data:
        raise ValueError(
            "--ca-bundle: must be the PEM text of the CA certificate (-----BEGIN CERTIFICATE-----...); "
            f"{path} holds none"
        )
    return data


#: `--tls-min-version` (as in dra_guard.admission.serving, not imported here).
TLS_MIN_VERSIONS = ("1.2", "1.3", "VersionTLS12", "VersionTLS13")
#: The environment variable the generated Deployment fills with its memory limit, in MiB.
MEMORY_LIMIT_ENV = "DRA_GUARD_MEMORY_LIMIT_MIB"


def add_webhook_parser(commands: Any) -> None:
    from dra_guard.contract.catalog import KUBERNETES_VERSIONS

    parser = commands.add_parser(
        "webhook",
        help="serve the validating admission webhook (HMAC tags, cross-object rules) over HTTPS",
        description="Serve AdmissionReview admission.k8s.io/v1 at /validate, with /healthz and /readyz "
        "(also on --probe-port, over HTTP). The certificate is reloaded when its files change.",
    )
    parser.add_argument("--tls-cert", required=True, metavar="FILE", help="PEM serving certificate (reloaded)")
    parser.add_argument("--tls-key", required=True, metavar="FILE", help="PEM private key (reloaded)")
    parser.add_argument(
        "--tls-min-version",
        choices=TLS_MIN_VERSIONS,
        default="1.2",
        help="oldest TLS version accepted (default 1.2, the Kubernetes default; the API server speaks 1.3)",
    )
    parser.add_argument(
        "--tls-cipher-suites",
        metavar="NAMES",
        help="comma-separated TLS 1.2 suites by IANA name, as Kubernetes components take them "
        "(default: OpenSSL's secure defaults; TLS 1.3's cannot be chosen)",
    )
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    parser.add_argument("--port", type=int, default=8443, help="port (default 8443)")
    parser.add_argument(
        "--probe-port",
        type=int,
        default=8081,
        metavar="PORT",
        help="plain-HTTP port for /healthz and /readyz only, answered when the review port is full "
        "(default 8081; 0: none)",
    )
    parser.add_argument(
        "--memory-limit-mib",
        type=int,
        default=None,
        metavar="MIB",
        help=f"the container's memory limit, which sizes the connection and review caps (default: ${MEMORY_LIMIT_ENV}, "
        "else 256, the generated Deployment's)",
    )
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
    parser.add_argument(
        "--kubernetes-version",
        choices=KUBERNETES_VERSIONS,
        help="the cluster's release: the rules' target, and which resource.k8s.io version templates are read in "
        "(default: the configuration's kubernetes-version)",
    )
    parser.add_argument(
        "--runtime-config",
        action="append",
        default=[],
        metavar="ENTRIES",
        help="your kube-apiserver's --runtime-config (repeatable), e.g. resource.k8s.io/v1beta2=true: the "
        "templates are read in the newest version the cluster then serves (1.33 serves none by default)",
    )


def template_api_version(kubernetes_version: str, runtime_config: tuple[str, ...] | None) -> str:
    """The resource.k8s.io version the webhook reads ResourceClaimTemplates in: the newest
    one a `kubernetes_version` API server with `runtime_config` serves. Raises `ValueError`
    naming the flag."""
    from dra_guard.contract.served import template_api_version as served_version

    try:
        return served_version(kubernetes_version, runtime_config)
    except ValueError as error:
        flag = "--runtime-config" if str(error).startswith("runtime_config") else "--in-cluster"
        raise ValueError(f"{flag}: {error}") from None


def _memory_limit(arguments: argparse.Namespace, environ: Any) -> int:
    if arguments.memory_limit_mib is not None:
        return int(arguments.memory_limit_mib)
    text = environ.get(MEMORY_LIMIT_ENV)
    if not text:
        from dra_guard.admission.serving import MEMORY_LIMIT_MIB

        return MEMORY_LIMIT_MIB
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{MEMORY_LIMIT_ENV}: {text!r} is not a number of MiB") from None


def run_webhook(arguments: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    import gc
    import logging
    import os
    import signal
    import socket
    import threading

    from dra_guard.admission.serving import (
        CertificateError,
        JsonLines,
        Limits,
        ServingCertificate,
        WebhookServer,
        listening_socket,
        server_context,
    )
    from dra_guard.admission.webhook import DEFAULT_MAX_BODY, KubernetesTemplates, NoTemplates, TemplateSource, Webhook
    from dra_guard.contract.findings import Severity
    from dra_guard.read.config_file import load_config_file, parse_config
    from dra_guard.ruleapi.config import KUBERNETES_VERSION, Config, ConfigError
    from dra_guard.rules import RULES

    handler = JsonLines(stderr)
    log = logging.getLogger("dra_guard.webhook")
    before = (log.level, log.propagate)

    def unlog() -> None:
        log.removeHandler(handler)
        log.setLevel(before[0])
        log.propagate = before[1]

    try:
        config = load_config_file(arguments.config, RULES) if arguments.config else Config()
        if arguments.kubernetes_version is not None:
            # The rules check for the cluster's release too, not only the lookups.
            config = config.with_value(KUBERNETES_VERSION, arguments.kubernetes_version)
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
        limits = Limits.for_memory(_memory_limit(arguments, os.environ))
        if arguments.max_body is not None and arguments.max_body <= 0:
            raise ValueError(f"--max-body: must be a positive number of bytes, got {arguments.max_body}")
        if (arguments.max_body or DEFAULT_MAX_BODY) > limits.body_bytes:
            raise ValueError(
                f"--max-body: {arguments.max_body} bytes is more than the {limits.body_bytes} bytes of request bodies "
                "the memory limit allows in flight; give a larger --memory-limit-mib"
            )
        templates: TemplateSource = NoTemplates()
        if arguments.in_cluster:
            runtime_config = tuple(arguments.runtime_config) or None
            api_version = template_api_version(config.get(KUBERNETES_VERSION), runtime_config)
            if not os.environ.get("KUBERNETES_SERVICE_HOST"):
                raise ValueError("--in-cluster: KUBERNETES_SERVICE_HOST is not set (not running in a pod?)")
            try:
                import kubernetes  # noqa: F401 - only to say what is missing
            except ImportError:
                raise ValueError("--in-cluster needs the kubernetes client: pip install 'dra-guard[webhook]'") from None
            try:
                templates = KubernetesTemplates.in_cluster(api_version=api_version)
            except ValueError as error:
                raise ValueError(f"--in-cluster: {error}") from None
        elif arguments.runtime_config:
            raise ValueError("--runtime-config: only used with --in-cluster")
        try:
            import cryptography  # noqa: F401 - only to say what is missing
            import uvicorn  # noqa: F401
        except ImportError:
            raise ValueError("the webhook needs uvicorn and cryptography: pip install 'dra-guard[webhook]'") from None
        context = server_context(arguments.tls_min_version, arguments.tls_cipher_suites)
        certificate = ServingCertificate(context, arguments.tls_cert, arguments.tls_key)
        sockets: list[socket.socket] = []
        for port in (arguments.port, arguments.probe_port):
            if port == 0 and sockets:
                break
            try:
                sockets.append(listening_socket(arguments.host, port))
            except OSError as error:
                for sock in sockets:
                    sock.close()
                raise ValueError(f"cannot listen on {arguments.host}:{port}: {error.strerror or error}") from None
        # Logged from here on: the certificate's first load (the last check) says what it holds.
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
        try:
            certificate.load()
        except CertificateError:
            for sock in sockets:
                sock.close()
            raise
    except (ValueError, ConfigError, CertificateError) as error:
        unlog()
        stderr.write(f"dra-guard: {error}\n")
        return EXIT_ERROR
    except OSError as error:
        unlog()
        stderr.write(f"dra-guard: {error.filename}: {error.strerror or error}\n")
        return EXIT_ERROR
    # uvicorn's own messages (a malformed request, a shutdown) as JSON lines too.
    server_log = logging.getLogger("uvicorn")
    server_log.addHandler(_json_handler(stderr))
    server_log.setLevel(logging.WARNING)
    server_log.propagate = False
    app = Webhook(
        RULES,
        config,
        templates=templates,
        fail_on=Severity.parse(arguments.fail_on),
        all_rules=arguments.all_rules,
        max_body=arguments.max_body or DEFAULT_MAX_BODY,
        max_reviews=limits.max_reviews,
        body_bytes=limits.body_bytes,
        certificate=certificate,
    )
    server = WebhookServer(
        app,
        app.probes,
        review_socket=sockets[0],
        probe_socket=sockets[1] if len(sockets) > 1 else None,
        certificate=certificate,
        limits=limits,
    )
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()
        server.stop()

    previous = {signum: signal.signal(signum, on_signal) for signum in (signal.SIGTERM, signal.SIGINT)}
    # What start-up made (the rules, the configuration, the clients) lives as long as the
    # process: the collector's full collections need not scan it again, under load.
    gc.collect()
    gc.freeze()
    # The lines are JSON the webhook writes whole: no record needs its thread or process,
    # which logging would otherwise look up for every review's line.
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    try:
        thread = server.start()
        while thread.is_alive():
            thread.join(0.5)
    finally:
        for signum, handler_before in previous.items():
            signal.signal(signum, handler_before)
    if server.error is not None:
        stderr.write(f"dra-guard: the webhook stopped: {type(server.error).__name__}: {server.error}\n")
        return EXIT_ERROR
    return EXIT_CLEAN


def _json_handler(stream: TextIO) -> Any:
    import json
    import logging
    import time

    class JsonLines(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            fields = {"time": round(time.time(), 3), "event": "server", "level": record.levelname.lower()}
            return json.dumps({**fields, "message": record.getMessage()}, ensure_ascii=False, sort_keys=True)

    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLines())
    return handler
