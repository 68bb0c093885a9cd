"""Device-plugin requests -> claim templates and pod wiring, for one object at a time.

Pure: plain objects in, `Edit`s, new ResourceClaimTemplates and a report out.  Nothing is
half-done: an object with any request migrate cannot replace gets no edit at all, and the
report says why, at the path of the request.

Counting follows the kubelet: a pod needs the sum of what its regular (and sidecar)
containers request and at least the most any init container requests, since init
containers run before them and hand their devices on.  One claim of that count is shared
by every container that asked for the profile, which is what "one ResourceClaimTemplate
per workload and profile" means.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from dra_guard.builders import POD_CLAIM_NAME, claim_template
from dra_guard.catalog import POD_SPEC_PATHS
from dra_guard.migrate.edits import Edit, Path
from dra_guard.migrate.legacy import Replacement, Unmigratable, is_migratable_name, pin_hint, resolve
from dra_guard.migrate.settings import MigrationSettings
from dra_guard.spec import name_from_id

#: Containers whose resources migrate rewrites; ephemeral containers may not have any.
CONTAINER_LISTS = ("initContainers", "containers")
SECTIONS = ("limits", "requests")
# LimitRange fields that inject quantities into containers (`max`/`min` do too, through
# defaulting: see the "Migrate from the device plugin" section of README.md).
LIMIT_RANGE_FIELDS = ("default", "defaultRequest", "max", "min", "maxLimitRequestRatio")
_WHOLE_NUMBER = re.compile(r"[0-9]+")
#: Keys that hold a container's ResourceRequirements: `resources`, and a TrainJob's
#: `spec.trainer.resourcesPerNode`, which Kubeflow merges into its runtime's container.
REQUIREMENT_KEYS = frozenset({"resources", "resourcesPerNode"})
#: Why a kind's legacy requests cannot be rewritten in place (tests/fixtures/crds/POD-TEMPLATES.md).
NO_POD_TEMPLATE = {
    "TrainJob": "a TrainJob has no pod template; its pods come from the training runtime in spec.runtimeRef, "
    "so give that runtime the claim and remove resourcesPerNode's request",
}


@dataclass(frozen=True)
class Message:
    path: Path
    text: str


@dataclass(frozen=True)
class LegacyRequest:
    """One container's request for one legacy resource."""

    container: str
    #: Path of the first `limits`/`requests` key that asked for it.
    path: Path
    resource: str
    count: int


@dataclass
class CreatedTemplate:
    namespace: str | None
    name: str
    device_class: str
    #: `<domain>/<attribute>=<value>`, the selector's pin.
    pin: str
    count: int
    pod_claim: str
    containers: tuple[str, ...]


@dataclass
class ObjectReport:
    """What migrate did, or could not do, to one object."""

    #: Where the object sits in its document: () or ("items", n).
    path: Path
    kind: str
    namespace: str | None
    name: str | None
    requests: list[LegacyRequest] = field(default_factory=list)
    templates: list[CreatedTemplate] = field(default_factory=list)
    notes: list[Message] = field(default_factory=list)
    errors: list[Message] = field(default_factory=list)

    @property
    def ref(self) -> str:
        return f"{self.kind or '?'}/{self.namespace or '-'}/{self.name or '-'}"

    @property
    def status(self) -> str:
        if self.errors:
            return "refused"
        return "migrated" if self.templates or self.requests else "changed"


@dataclass
class ObjectMigration:
    edits: list[Edit] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)
    report: ObjectReport | None = None


class TemplateNames:
    """ResourceClaimTemplate names already in the input, and those migrate has given out."""

    def __init__(self, taken: set[tuple[str | None, str]] | None = None) -> None:
        self.taken: set[tuple[str | None, str]] = set(taken or ())

    def note_existing(self, obj: object) -> None:
        if isinstance(obj, Mapping) and obj.get("kind") == "ResourceClaimTemplate":
            metadata = obj.get("metadata")
            if isinstance(metadata, Mapping) and isinstance(metadata.get("name"), str):
                namespace = metadata.get("namespace")
                self.taken.add((namespace if isinstance(namespace, str) else None, metadata["name"]))

    def claim(self, namespace: str | None, wanted: str) -> str:
        """`wanted`, or `wanted-2`, `wanted-3`, ... if that is taken in `namespace`."""
        name, number = wanted, 1
        while (namespace, name) in self.taken:
            number += 1
            suffix = f"-{number}"
            name = wanted[: 253 - len(suffix)].rstrip("-.") + suffix
        self.taken.add((namespace, name))
        return name


def profile_slug(device_class: str, pin_value: str) -> str:
    """`mig-1g-10gb`, `gpu-nvidia-a100-sxm4-40gb`, `tpu-v6e`: the class's first label and the pin."""
    return name_from_id(f"{device_class.partition('.')[0]}-{pin_value}", "profile")


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _get(obj: object, path: Path) -> Any:
    for part in path:
        if isinstance(part, int):
            items = _list(obj)
            obj = items[part] if part < len(items) else None
        else:
            obj = _mapping(obj).get(part)
    return obj


def legacy_quantities(obj: object, settings: MigrationSettings) -> Iterator[tuple[Path, str]]:
    """Every legacy key of every `resources.limits`/`requests` mapping, at any depth."""
    stack: list[tuple[Any, Path]] = [(obj, ())]
    found: list[tuple[Path, str]] = []
    while stack:
        current, path = stack.pop()
        if isinstance(current, Mapping):
            for key, value in current.items():
                if key in REQUIREMENT_KEYS and isinstance(value, Mapping):
                    for section in SECTIONS:
                        for name in _mapping(value.get(section)):
                            if isinstance(name, str) and is_migratable_name(
                                name, settings.extra_legacy_resources, settings.is_accelerator
                            ):
                                found.append(((*path, "resources", section, name), name))
                if isinstance(value, (Mapping, list)):
                    stack.append((value, (*path, str(key))))
        elif isinstance(current, list):
            stack.extend((value, (*path, index)) for index, value in enumerate(current))
    yield from sorted(found, key=lambda item: [str(part) for part in item[0]])


def _count(value: object) -> int | None:
    """A whole-number quantity, as extended resources must be; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and _WHOLE_NUMBER.fullmatch(value):
        return int(value)
    return None


@dataclass
class _ContainerNeed:
    path: Path
    name: str
    #: Runs alongside the others (a regular container or a sidecar), rather than before them.
    concurrent: bool
    #: (device class, pin value) -> count
    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    #: (device class, pin value) -> what replaces it
    replacements: dict[tuple[str, str], Replacement] = field(default_factory=dict)
    #: Legacy keys to remove, by section.
    remove: dict[str, list[str]] = field(default_factory=dict)


def migrate_object(
    obj: Mapping[str, Any], prefix: Path, settings: MigrationSettings, names: TemplateNames
) -> ObjectMigration:
    """The edits (paths under `prefix`) and templates that migrate one object."""
    kind = obj.get("kind") if isinstance(obj.get("kind"), str) else ""
    metadata = _mapping(obj.get("metadata"))
    namespace = metadata.get("namespace") if isinstance(metadata.get("namespace"), str) else None
    name = metadata.get("name") if isinstance(metadata.get("name"), str) else None
    report = ObjectReport(prefix, str(kind), namespace, name)
    if kind == "LimitRange":
        edits = _limit_range(obj, prefix, settings, report)
        return ObjectMigration(edits, [], report if edits else None)
    legacy = list(legacy_quantities(obj, settings))
    if not legacy:
        return ObjectMigration()
    migration = ObjectMigration(report=report)
    spec_path = POD_SPEC_PATHS.get(str(kind))
    pod_spec = _get(obj, spec_path) if spec_path is not None else None
    needs = _container_needs(
        obj=obj, spec_path=spec_path, pod_spec=pod_spec, legacy=legacy, settings=settings, report=report
    )
    base = name or (metadata.get("generateName") or "").rstrip("-") or None
    if base is None:
        report.errors.append(Message(("metadata",), "has no metadata.name to name its claim template after"))
    if report.errors:
        return migration
    assert spec_path is not None and isinstance(pod_spec, Mapping) and base is not None
    if name is None:
        report.notes.append(Message(("metadata", "generateName"), f"claim templates are named after {base!r}"))
    tenant = namespace if settings.tenant_from_namespace else None
    if settings.tenant_from_namespace and namespace is None:
        report.notes.append(Message(("metadata",), "no namespace, so the template names no tenant"))

    profiles = sorted({profile for need in needs for profile in need.counts})
    pod_claims_taken = {
        claim.get("name") for claim in _list(pod_spec.get("resourceClaims")) if isinstance(claim, Mapping)
    }
    templates: list[tuple[tuple[str, str], str, dict[str, Any]]] = []
    for profile in profiles:
        users = [need for need in needs if profile in need.counts]
        try:
            template, created = _template(
                profile, users, base=base, namespace=namespace, tenant=tenant, settings=settings, names=names
            )
        except ValueError as error:
            report.errors.append(Message(users[0].path, str(error)))
            continue
        # One profile keeps the builders' claim name; several are told apart by profile.
        created.pod_claim = _free(POD_CLAIM_NAME if len(profiles) == 1 else created.pod_claim, pod_claims_taken)
        pod_claims_taken.add(created.pod_claim)
        templates.append((profile, created.pod_claim, template))
        report.templates.append(created)
        if len(users) > 1:
            report.notes.append(
                Message(
                    spec_path,
                    f"containers {', '.join(created.containers)} now share one claim of {created.count} "
                    f"{created.device_class} device(s); split the template if each needs devices of its own",
                )
            )
    if report.errors:
        report.templates.clear()
        return migration

    migration.templates = [template for _, _, template in templates]
    migration.edits = _wiring_edits(
        prefix=prefix, spec_path=spec_path, pod_spec=pod_spec, needs=needs, obj=obj, templates=templates
    )
    return migration


def _template(
    profile: tuple[str, str],
    users: list[_ContainerNeed],
    *,
    base: str,
    namespace: str | None,
    tenant: str | None,
    settings: MigrationSettings,
    names: TemplateNames,
) -> tuple[dict[str, Any], CreatedTemplate]:
    """The template for one profile of one pod, built by `claim_template` (ValueError if invalid)."""
    alongside = sum(need.counts[profile] for need in users if need.concurrent)
    count = max([alongside, *(need.counts[profile] for need in users if not need.concurrent)])
    accelerator = users[0].replacements[profile].make_slice(count)
    slug = profile_slug(*profile)
    options: dict[str, Any] = {**settings.claim_options(), "slice": accelerator, "tenant": tenant}
    wanted = f"{base}-{slug}"[:253].rstrip("-.")
    template = claim_template(name=wanted, namespace=namespace, **options)  # bad options fail before a name is taken
    name = names.claim(namespace, wanted)
    if name != wanted:
        template = claim_template(name=name, namespace=namespace, **options)
    pin = f"{accelerator.pin_attribute}={accelerator.pin_value}"
    created = CreatedTemplate(namespace, name, profile[0], pin, count, slug, tuple(need.name for need in users))
    return template, created


def _free(wanted: str, taken: set[Any]) -> str:
    name, number = wanted, 1
    while name in taken:
        number += 1
        name = f"{wanted[:60]}-{number}"
    return name


def _container_needs(
    *,
    obj: Mapping[str, Any],
    spec_path: Path | None,
    pod_spec: Any,
    legacy: list[tuple[Path, str]],
    settings: MigrationSettings,
    report: ObjectReport,
) -> list[_ContainerNeed]:
    """What each container asks for, or errors in `report` for every request migrate cannot replace."""
    needs: dict[Path, _ContainerNeed] = {}
    if spec_path is not None and isinstance(pod_spec, Mapping):
        for list_name in CONTAINER_LISTS:
            for index, container in enumerate(_list(pod_spec.get(list_name))):
                if isinstance(container, Mapping):
                    path = (*spec_path, list_name, index)
                    concurrent = list_name == "containers" or container.get("restartPolicy") == "Always"
                    needs[path] = _ContainerNeed(path, str(container.get("name", "")), concurrent)
    for path, resource in legacy:
        need = needs.get(path[:-3])
        if need is None:
            where = (
                NO_POD_TEMPLATE.get(report.kind, f"kind {report.kind or '?'} has no pod template migrate knows")
                if spec_path is None
                else "this is not in a container of the pod template"
            )
            report.errors.append(Message(path, f"{resource}: {where}; replace it by hand"))
            continue
        need.remove.setdefault(str(path[-2]), []).append(resource)
    for need in needs.values():
        _count_container(_mapping(_get(obj, need.path)), need, settings, report)
    return [need for need in needs.values() if need.remove]


def _count_container(
    container: Mapping[str, Any], need: _ContainerNeed, settings: MigrationSettings, report: ObjectReport
) -> None:
    resources = _mapping(container.get("resources"))
    limits, requests = _mapping(resources.get("limits")), _mapping(resources.get("requests"))
    for resource in dict.fromkeys(name for names in need.remove.values() for name in names):
        section = "limits" if resource in limits else "requests"
        path = (*need.path, "resources", section, resource)
        limit, request = _count(limits.get(resource)), _count(requests.get(resource))
        if (resource in limits and limit is None) or (resource in requests and request is None):
            bad = limits.get(resource) if resource in limits and limit is None else requests.get(resource)
            report.errors.append(Message(path, f"{resource}: {bad!r} is not a whole number of devices"))
            continue
        if resource in limits and resource in requests and limit != request:
            differ = f"limits ({limit}) and requests ({request}) differ; Kubernetes needs them equal"
            report.errors.append(Message(path, f"{resource}: {differ}"))
            continue
        count = limit if limit is not None else request
        assert count is not None
        found = resolve(resource, settings.pins, settings.device_class)
        if isinstance(found, Unmigratable):
            report.errors.append(Message(path, f"{resource}: {found.reason}"))
            continue
        if found.pin_value is None:
            report.errors.append(Message(path, f"{resource}: {pin_hint(found.device_class)}"))
            continue
        report.requests.append(LegacyRequest(need.name, path, resource, count))
        if found.note:
            report.notes.append(Message(path, found.note))
        if count == 0:
            report.notes.append(Message(path, f"{resource}: asked for 0 devices; removed without a claim"))
            continue
        profile = (found.device_class.name, found.pin_value)
        need.counts[profile] = need.counts.get(profile, 0) + count
        need.replacements.setdefault(profile, found)


def _wiring_edits(
    *,
    prefix: Path,
    spec_path: Path,
    pod_spec: Mapping[str, Any],
    needs: list[_ContainerNeed],
    obj: Mapping[str, Any],
    templates: list[tuple[tuple[str, str], str, dict[str, Any]]],
) -> list[Edit]:
    claim_of = {profile: pod_claim for profile, pod_claim, _ in templates}
    edits: list[Edit] = []
    for need in needs:
        resources = _mapping(_mapping(_get(obj, need.path)).get("resources"))
        claims = [{"name": claim_of[profile]} for profile in sorted(need.counts)]
        edits.extend(_container_edits((*prefix, *need.path, "resources"), resources, need.remove, claims))
    pod_claims = [
        {"name": pod_claim, "resourceClaimTemplateName": template["metadata"]["name"]}
        for _, pod_claim, template in templates
    ]
    spec_at = (*prefix, *spec_path)
    if isinstance(pod_spec.get("resourceClaims"), list):
        edits.extend(Edit("append", (*spec_at, "resourceClaims"), claim) for claim in pod_claims)
    elif pod_claims:
        edits.append(Edit("add", (*spec_at, "resourceClaims"), pod_claims))
    return edits


def _container_edits(
    at: Path, resources: Mapping[str, Any], remove: Mapping[str, list[str]], claims: list[dict[str, str]]
) -> list[Edit]:
    """Drop the legacy keys (and a `limits`/`requests` they empty), then add the claims."""
    edits: list[Edit] = []
    emptied = []
    for section in SECTIONS:
        quantities = _mapping(resources.get(section))
        removed = [name for name in remove.get(section, []) if name in quantities]
        if quantities and len(removed) == len(quantities):
            emptied.append(section)
            edits.append(Edit("delete", (*at, section)))
        else:
            edits.extend(Edit("delete", (*at, section, name)) for name in removed)
    if claims and isinstance(resources.get("claims"), list):
        edits.extend(Edit("append", (*at, "claims"), claim) for claim in claims)
    elif claims:
        edits.append(Edit("add", (*at, "claims"), claims))
    elif set(resources) <= set(emptied):
        # Only requests for 0 devices: an empty `resources` says nothing, drop it.
        return [Edit("delete", at)]
    return edits


def _limit_range(obj: Mapping[str, Any], prefix: Path, settings: MigrationSettings, report: ObjectReport) -> list[Edit]:
    """Remove accelerator defaults from a LimitRange: a claim cannot be defaulted into pods."""
    edits: list[Edit] = []
    for index, item in enumerate(_list(_mapping(obj.get("spec")).get("limits"))):
        for field_name in LIMIT_RANGE_FIELDS:
            quantities = _mapping(_mapping(item).get(field_name))
            legacy = [
                name
                for name in quantities
                if isinstance(name, str)
                and is_migratable_name(name, settings.extra_legacy_resources, settings.is_accelerator)
            ]
            if not legacy:
                continue
            path = ("spec", "limits", index, field_name)
            if len(legacy) == len(quantities):
                edits.append(Edit("delete", (*prefix, *path)))
            else:
                edits.extend(Edit("delete", (*prefix, *path, name)) for name in legacy)
            report.notes.append(
                Message(
                    path,
                    f"removed {', '.join(legacy)} from this LimitRange's {field_name}: pods get accelerators only "
                    "through their own claims now",
                )
            )
    return edits
