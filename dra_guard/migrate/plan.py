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

from dra_guard.building.builders import POD_CLAIM_NAME, claim_template, scrub_container
from dra_guard.building.spec import name_from_id, scrub_unperformed
from dra_guard.contract.catalog import DEVICE_CLASSES, SCRUB_BEFORE_USE, class_selector
from dra_guard.contract.scrubber import SCRUB_CONTAINER_NAME, not_the_scrubber
from dra_guard.migrate.edits import Edit, Path
from dra_guard.migrate.existing import InputClaims, pod_claim_target
from dra_guard.migrate.legacy import Replacement, Unmigratable, is_migratable_name, pin_hint, resolve
from dra_guard.migrate.operators import Removal, review
from dra_guard.migrate.settings import MigrationSettings
from dra_guard.migrate.sites import Container, PodSite, pod_sites, unknown_kind_reason
from dra_guard.model.extended_resources import Unverifiable, operator_requests
from dra_guard.ruleapi.device_classes import selects_scrubbed_devices

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
    "TrainJob": "a TrainJob has no pod template: its pods come from the training runtime in spec.runtimeRef, "
    "whose node container's resources Kubeflow Trainer replaces with resourcesPerNode, claims included "
    "(pkg/runtime/core/trainingruntime.go)",
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
    """ResourceClaimTemplate names already in the input, and those migrate has given out; and
    what the input's claims, templates and DeviceClasses say (`found`), which the scrubber
    migrate adds needs to know which of a pod's claims it must hold."""

    def __init__(self, taken: set[tuple[str | None, str]] | None = None) -> None:
        self.taken: set[tuple[str | None, str]] = set(taken or ())
        self.found = InputClaims()

    def note_existing(self, obj: object) -> None:
        self.found.note(obj)
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


def needs_migration(obj: object, settings: MigrationSettings) -> bool:
    """Whether migrate has anything to do, or to say, about `obj` (cheap: no templates built)."""
    if not isinstance(obj, Mapping):
        return False
    if obj.get("kind") == "LimitRange":
        return bool(_limit_range(obj, (), settings, ObjectReport((), "LimitRange", None, None)))
    if is_list(obj):
        return any(needs_migration(item, settings) for item in obj["items"])
    return any(True for _ in legacy_quantities(obj, settings)) or any(True for _ in operator_requests(obj))


def is_list(obj: Mapping[str, Any]) -> bool:
    """`List` and every `*List` carry their objects in `items`."""
    kind = obj.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and isinstance(obj.get("items"), list)


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
    container: Container
    #: (device class, pin value) -> count
    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    #: (device class, pin value) -> what replaces it
    replacements: dict[tuple[str, str], Replacement] = field(default_factory=dict)
    #: Legacy keys to remove, by section.
    remove: dict[str, list[str]] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return self.container.path


@dataclass
class _SiteNeeds:
    site: PodSite
    needs: list[_ContainerNeed]

    @property
    def profiles(self) -> list[tuple[str, str]]:
        return sorted({profile for need in self.needs for profile in need.counts})


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
    if _operator_fields(obj, settings, report):
        return ObjectMigration(report=report)
    if not legacy:
        return ObjectMigration()
    migration = ObjectMigration(report=report)
    sites = _site_needs(obj, legacy, settings, report)
    controllers = review(
        obj, [Removal(site.site, need.container, need.remove) for site in sites for need in site.needs]
    )
    report.errors.extend(Message(path, text) for path, text in controllers.errors)
    report.notes.extend(Message(path, text) for path, text in controllers.notes)
    base = name or (metadata.get("generateName") or "").rstrip("-") or None
    if base is None:
        report.errors.append(Message(("metadata",), "has no metadata.name to name its claim template after"))
    # A template's isolation tag binds the namespace it lands in: one that names none would
    # land wherever `kubectl apply -n` puts it, and its tag could not be verified there.
    applied_to = namespace if namespace is not None else settings.namespace
    if applied_to is None:
        report.errors.append(
            Message(
                ("metadata",),
                "has no namespace, and its claim template needs one (the isolation tag binds the namespace the "
                "claim lands in): pass --namespace NS, the namespace you apply it to",
            )
        )
    if report.errors or base is None or applied_to is None:
        return migration
    if name is None:
        report.notes.append(Message(("metadata", "generateName"), f"claim templates are named after {base!r}"))
    if namespace is None:
        report.notes.append(
            Message(
                ("metadata",),
                f"no namespace: its claim template(s) are written for {applied_to} (--namespace); apply it there "
                f"too (kubectl apply -n {applied_to})",
            )
        )
    tenant = applied_to if settings.tenant_from_namespace else None

    for site in sites:
        # An object with pods of several kinds (JobSet jobs, Ray groups) names each site's templates.
        site_base = base if len(sites) == 1 else f"{base}-{site.site.label}"
        templates = _site_templates(
            obj,
            site,
            base=site_base,
            namespace=applied_to,
            tenant=tenant,
            settings=settings,
            names=names,
            report=report,
        )
        migration.templates.extend(template for _, _, template in templates)
        migration.edits.extend(_wiring_edits(prefix, obj, site, templates))
        migration.edits.extend(
            _scrubber_edits(prefix, obj, site.site, templates, settings=settings, found=names.found, report=report)
        )
    if migration.templates:
        migration.edits.extend(Edit(edit.action, (*prefix, *edit.path), edit.value) for edit in controllers.edits)
    if report.errors:
        report.templates.clear()
        migration.templates.clear()
        migration.edits.clear()
    return migration


def _site_templates(
    obj: Mapping[str, Any],
    site: _SiteNeeds,
    *,
    base: str,
    namespace: str | None,
    tenant: str | None,
    settings: MigrationSettings,
    names: TemplateNames,
    report: ObjectReport,
) -> list[tuple[tuple[str, str], str, dict[str, Any]]]:
    """(profile, pod claim name, template) for each profile the site's containers ask for."""
    profiles = site.profiles
    pod_spec = _mapping(_get(obj, site.site.path))
    pod_claims_taken = {
        claim.get("name")
        for claim in (*_list(pod_spec.get("resourceClaims")), *site.site.inherited_claims)
        if isinstance(claim, Mapping)
    }
    templates = []
    for profile in profiles:
        users = [need for need in site.needs if profile in need.counts]
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
                    site.site.path,
                    f"containers {', '.join(created.containers)} now share one claim of {created.count} "
                    f"{created.device_class} device(s); split the template if each needs devices of its own",
                )
            )
    return templates


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
    alongside = sum(need.counts[profile] for need in users if need.container.concurrent)
    count = max([alongside, *(need.counts[profile] for need in users if not need.container.concurrent)])
    accelerator = users[0].replacements[profile].make_slice(count)
    if settings.sanitization == SCRUB_BEFORE_USE and not _scrubbed(accelerator.device_class, settings):
        # The builders cannot see the selector extra-classes gives a class; `check` can.
        raise ValueError(scrub_unperformed(accelerator.device_class))
    slug = profile_slug(*profile)
    options: dict[str, Any] = {**settings.claim_options(), "slice": accelerator, "tenant": tenant}
    wanted = f"{base}-{slug}"[:253].rstrip("-.")
    template = claim_template(name=wanted, namespace=namespace, **options)  # bad options fail before a name is taken
    name = names.claim(namespace, wanted)
    if name != wanted:
        template = claim_template(name=name, namespace=namespace, **options)
    pin = f"{accelerator.pin_attribute}={accelerator.pin_value}"
    names_of_users = tuple(need.container.name for need in users)
    return template, CreatedTemplate(namespace, name, profile[0], pin, count, slug, names_of_users)


def _free(wanted: str, taken: set[Any]) -> str:
    name, number = wanted, 1
    while name in taken:
        number += 1
        name = f"{wanted[:60]}-{number}"
    return name


def _operator_fields(obj: Mapping[str, Any], settings: MigrationSettings, report: ObjectReport) -> bool:
    """Refuse (errors in `report`) the accelerators an operator's own fields ask for (a
    SparkApplication's `driver.gpu`, a KubeAI Model's `resourceProfile`, ...), which the
    operator writes into its pods' limits: no claim can stand in for them in the object, and
    `check` reports them (DRA001); so is a profile whose contents no manifest shows, for a
    person to decide, as `check` cannot verify it either.  Whether there was any."""
    said = False
    for asked in operator_requests(obj):
        if isinstance(asked, Unverifiable):
            report.errors.append(Message(asked.path, f"cannot verify: {asked.why}; decide it by hand"))
        elif is_migratable_name(asked.name, settings.extra_legacy_resources, settings.is_accelerator):
            report.errors.append(
                Message(
                    asked.path,
                    f"{asked.name}: asked through {asked.via}; migrate rewrites pod specs, not an operator's "
                    "fields: replace it by hand (the operator's own DRA support, or a pod template it passes on)",
                )
            )
        else:
            continue
        said = True
    return said


def _site_needs(
    obj: Mapping[str, Any], legacy: list[tuple[Path, str]], settings: MigrationSettings, report: ObjectReport
) -> list[_SiteNeeds]:
    """What each container of each pod site asks for; errors in `report` for every request
    migrate cannot replace."""
    sites = pod_sites(obj)
    needs: dict[Path, tuple[PodSite, _ContainerNeed]] = {
        container.path: (site, _ContainerNeed(container)) for site in sites for container in site.containers
    }
    kind = report.kind or "?"
    for path, resource in legacy:
        found = needs.get(path[:-3])
        if found is None:
            where = (
                NO_POD_TEMPLATE.get(kind) or unknown_kind_reason(obj)
                if not sites
                else "this is not in a container of the pod template"
            )
            report.errors.append(Message(path, f"{resource}: {where}; replace it by hand"))
            continue
        found[1].remove.setdefault(str(path[-2]), []).append(resource)
    for _, need in needs.values():
        if need.remove:
            _count_container(_mapping(_get(obj, need.path)), need, settings, report)
    return [
        _SiteNeeds(site, [need for container_site, need in needs.values() if container_site is site and need.remove])
        for site in sites
        if any(container_site is site and need.remove for container_site, need in needs.values())
    ]


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
        report.requests.append(LegacyRequest(need.container.name, path, resource, count))
        if found.note:
            report.notes.append(Message(path, found.note))
        if count == 0:
            report.notes.append(Message(path, f"{resource}: asked for 0 devices; removed without a claim"))
            continue
        profile = (found.device_class.name, found.pin_value)
        need.counts[profile] = need.counts.get(profile, 0) + count
        need.replacements.setdefault(profile, found)


def _wiring_edits(
    prefix: Path,
    obj: Mapping[str, Any],
    site: _SiteNeeds,
    templates: list[tuple[tuple[str, str], str, dict[str, Any]]],
) -> list[Edit]:
    claim_of = {profile: pod_claim for profile, pod_claim, _ in templates}
    edits: list[Edit] = []
    for need in site.needs:
        resources = _mapping(_mapping(_get(obj, need.path)).get("resources"))
        claims = [{"name": claim_of[profile]} for profile in sorted(need.counts) if profile in claim_of]
        edits.extend(_container_edits((*prefix, *need.path, "resources"), resources, need.remove, claims))
    pod_claims = [
        {"name": pod_claim, "resourceClaimTemplateName": template["metadata"]["name"]}
        for _, pod_claim, template in templates
    ]
    if pod_claims:
        # A list of the site's own replaces what its pods inherited (Argo): keep that first.
        pod_claims = [dict(claim) for claim in site.site.inherited_claims] + pod_claims
    at = (*prefix, *site.site.claims_path)
    if isinstance(_get(obj, site.site.claims_path), list):
        edits.extend(Edit("append", at, claim) for claim in pod_claims)
    elif pod_claims:
        edits.append(Edit("add", at, pod_claims))
    return edits


def _scrubber_edits(
    prefix: Path,
    obj: Mapping[str, Any],
    site: PodSite,
    templates: list[tuple[tuple[str, str], str, dict[str, Any]]],
    *,
    settings: MigrationSettings,
    found: InputClaims,
    report: ObjectReport,
) -> list[Edit]:
    """The scrubber as the first init container, holding the claims of the classes it scrubs
    (DRA016), or the claims added to a scrubber already first: the new ones, and those the pod
    already had (`_existing_claims`)."""
    created = [pod_claim for (device_class, _), pod_claim, _ in templates if _scrubbed(device_class, settings)]
    if settings.scrub_image is None or not created:
        return []
    claims = [*_existing_claims(obj, site, settings=settings, found=found, report=report), *created]
    at = (*prefix, *site.path, "initContainers")
    init_containers = _get(obj, (*site.path, "initContainers"))
    if not isinstance(init_containers, list) or not init_containers:
        return [Edit("add", at, [scrub_container(settings.scrub_image, claims)])]
    first = _mapping(init_containers[0])
    if first.get("name") == SCRUB_CONTAINER_NAME:
        problem = _adoption_problem(first, settings.scrub_image)
        if problem is not None:
            # Giving it the claims would make a look-alike pass for the scrubber (DRA016).
            report.errors.append(
                Message(
                    (*site.path, "initContainers", 0),
                    f"is named {SCRUB_CONTAINER_NAME!r} but is not the scrubber: it {problem}; replace it with the "
                    "scrubber or rename it",
                )
            )
            return []
        resources = _mapping(first.get("resources"))
        held = {
            _mapping(entry).get("name") for entry in _list(resources.get("claims")) if "request" not in _mapping(entry)
        }
        entries = [{"name": claim} for claim in claims if claim not in held]
        if not entries:
            return []
        if isinstance(resources.get("claims"), list):
            return [Edit("append", (*at, 0, "resources", "claims"), entry) for entry in entries]
        if "resources" in first:
            return [Edit("add", (*at, 0, "resources", "claims"), entries)]
        return [Edit("add", (*at, 0, "resources"), {"claims": entries})]
    if any(_mapping(container).get("name") == SCRUB_CONTAINER_NAME for container in init_containers):
        report.errors.append(
            Message(
                (*site.path, "initContainers"),
                f"has an init container named {SCRUB_CONTAINER_NAME!r} that is not the first; the scrubber must run "
                "before every other container (DRA016): move it first",
            )
        )
        return []
    return [Edit("prepend", at, scrub_container(settings.scrub_image, claims))]


def _existing_claims(
    obj: Mapping[str, Any], site: PodSite, *, settings: MigrationSettings, found: InputClaims, report: ObjectReport
) -> list[str]:
    """The pod claims the site already had that the scrubber must hold, as `check` decides it:
    those whose template or claim the input holds and asks for devices the scrubber scrubs.
    One whose template or claim is not in the input is left out, with a note: nothing here
    says what it asks for (`check` reports it too, as DRA016 `unknown-claim`)."""
    namespace = str(_mapping(obj.get("metadata")).get("namespace") or "")
    own = [((*site.claims_path, index), claim) for index, claim in enumerate(_list(_get(obj, site.claims_path)))]
    inherited = [(site.claims_path, claim) for claim in site.inherited_claims]
    held: list[str] = []
    for path, claim in (*own, *inherited):
        name, target = _mapping(claim).get("name"), pod_claim_target(_mapping(claim))
        if not isinstance(name, str) or target is None:
            continue  # no name, or neither a template nor a claim: DRA009 and DRA010 report it
        classes = found.classes(target[0], namespace, target[1], settings.kubernetes_version)
        if classes is None:
            report.notes.append(
                Message(
                    path,
                    f"pod claim {name!r} ({target[0]} {target[1]!r}) is not among the objects migrate was given, so "
                    "it cannot tell whether the claim asks for devices the scrubber scrubs: the scrubber does not "
                    "hold it; add it to the scrubber's resources.claims if it asks for NVIDIA GPUs or MIG devices "
                    "(DRA016)",
                )
            )
        elif any(settings.is_accelerator(cls) and _scrubbed(cls, settings, found) for cls in classes):
            held.append(name)
    return held


def _adoption_problem(first: Mapping[str, Any], image: str) -> str | None:
    """Why the pod's first init container, named as the scrubber, cannot take the claims."""
    if first.get("image") != image:
        return f"runs image {first.get('image')!r}, not the scrub image {image!r}"
    return not_the_scrubber(first)


def _scrubbed(device_class: str, settings: MigrationSettings, found: InputClaims | None = None) -> bool:
    """Whether the scrubber scrubs the class's devices, as `check` decides it with the same
    configuration (`dra_guard.ruleapi.device_classes.scrubbed_class`): by the selector
    extra-classes or the catalog gives the class (every template migrate makes is of one), which
    must fix NVIDIA's driver and a device type it reaches (gpu, mig; not vfio).  A class
    extra-classes declares without a selector is not: nothing shows which devices it selects.
    A class neither knows (a pod's existing claim may ask for one) is decided by the input's
    DeviceClass of that name (`found`), and is not scrubbed where there is none."""
    declared = settings.extra_classes.get(device_class)
    selector = declared.class_selector if declared is not None and declared.class_selector else None
    selector = selector or class_selector(device_class)
    if selector is not None:
        return selects_scrubbed_devices((selector,))
    if declared is not None or device_class in DEVICE_CLASSES or found is None:
        return False
    from_input = found.class_selectors(device_class)
    return from_input is not None and selects_scrubbed_devices(from_input)


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
