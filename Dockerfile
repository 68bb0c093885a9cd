# The admission webhook's image: dra-guard[webhook] (uvicorn, the Kubernetes client,
# cryptography) on a slim Python, running `dra-guard webhook` as the Deployment that
# `dra-guard admission-policy --deploy-webhook` and AdmissionGuard(webhook=...) generate
# runs it (dra_guard/admission/deploy.py).  Build it where a container registry is
# reachable (Docker Hub for the base image, PyPI for the packages), from the repository root:
#
#   docker build -t <your-registry>/dra-guard-webhook:0.1.0 .
#   docker push <your-registry>/dra-guard-webhook:0.1.0
#
# and give that reference, or its digest, as the webhook's `image` (`--webhook-image`).
# This project publishes no webhook image: the name above is yours to choose.
# The dependencies are pinned by docker/webhook-constraints.txt (tools/webhook_constraints.py
# writes it, for this base image's Python minor version; tests/test_webhook_image.py checks it).
FROM python:3.11.13-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY . /src
# pip compiles the modules as it installs them: the Deployment's root filesystem is read-only.
RUN python -m venv /opt/dra-guard \
 && /opt/dra-guard/bin/pip install --no-cache-dir -c /src/docker/webhook-constraints.txt '/src[webhook]' \
 && rm -rf /src
ENV PATH=/opt/dra-guard/bin:$PATH
# The Deployment's user and group too (runAsUser, runAsGroup, fsGroup): distroless' "nonroot".
USER 65532:65532
# 8443: admission reviews (HTTPS, the Service's target); 8081: /healthz and /readyz (HTTP).
EXPOSE 8443 8081
# The Deployment's command (dra-guard) and args (webhook --tls-cert ... --in-cluster)
# replace these two; `docker run` alone runs `dra-guard webhook`.
ENTRYPOINT ["dra-guard"]
CMD ["webhook"]
