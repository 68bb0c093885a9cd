"""What a DeviceClass selects, wherever dra-guard learns it, and whether it pins a profile.

A request's devices must pass its DeviceClass's selectors before its own (the allocator
ANDs them), so a class can pin a profile for every request of it: NVIDIA's per-profile
class `mig-1g-12gb.gpu.nvidia.com` selects `profile == '1g.12gb'`.  dra-guard learns a
class's selectors from, in this order: the configuration (`extra-classes.<class>.selector`),
the catalog (the drivers' own classes, which pin nothing), and only for a class neither
knows, a DeviceClass among the checked objects (what `kubectl apply` would make of it).
A DeviceClass in the input never replaces a class the configuration or the catalog knows:
DeviceClasses are cluster-scoped, so a tenant's file that redefines `gpu.nvidia.com` is
refused at apply (RBAC) and the claims relying on it land on the driver's class; the
admission policies, which see one claim, decide by the same classes.  DRA002 reports such
a redefinition on the DeviceClass (`redefinition`).

A pin counts as it does in a request (DRA002): a top-level `&&` conjunct
`device.attributes['<domain>'].<attribute> == '<literal>'`, decided by the RE2 pattern the
admission policies share (`dra_guard.model.conjuncts`).  The attribute must be the class's pin
attribute when the class is known; for a class dra-guard does not know, the pin attributes
of the catalog classes of the driver its selector names (`device.driver == '<driver>'`),
or any attribute when it names no driver dra-guard knows.

What a class selects also says whether it is an accelerator.  A class the configuration or
the catalog knows is what they say; a class neither knows counts as an accelerator (fail
closed) unless the input's DeviceClass of that name fixes `device.driver` to a driver whose
devices are never accelerators (a NIC's `dra.net`, a CPU's `dra.cpu`: the catalog's
`NON_ACCELERATOR_DRIVERS`) in a top-level `&&` conjunct, as DRANET's and AWS's EFA classes
do (`device.driver == "dra.net" && ...`).  A driver named anywhere else (`a || device.driver
== "dra.net"`) proves nothing, so the class stays an accelerator.  The other way round, a
NIC or CPU class the catalog knows only by the name its users give it (DRANET's `rdma`, ...:
`overridable`) is an accelerator when the input's DeviceClass of that name fixes an
accelerator driver (`ACCELERATOR_DRIVERS`: gpu.nvidia.com, tpu.google.com, ...) in a
top-level `&&` conjunct.  The admission policies, which see one claim or pod, decide by the
name; findings that rest on such a class are cross-object.

Whether the scrubber scrubs a class's devices is decided by what they are, from the class's
selectors (`scrubbed_class`): top-level `&&` conjuncts must fix `device.driver` to a driver
it scrubs and that driver's device type to one it reaches (`SCRUBBED_DEVICE_TYPES`:
`device.attributes['gpu.nvidia.com'].type == 'gpu'` or `'mig'`), as NVIDIA's `gpu.nvidia.com`,
`mig.nvidia.com` and per-profile classes do; NVIDIA's passthrough devices (`type == 'vfio'`)
are of the same driver and are not scrubbed.  The selectors are those of the configuration
(`extra-classes.<class>.selector`) or the catalog for a class either knows, else the input's
DeviceClass of that name.  Where they do not fix both (no selector configured for a class of
`extra-classes`, no DeviceClass in the input, a driver named only under `||`, a type named
with `in` or `!=`), the class is not scrubbed: dra-guard cannot tell that no passthrough
device is among its devices (fail closed).  The webhook and the admission policies see no
DeviceClass: there a class is scrubbed when the configuration's or the catalog's selectors
show it (`scrubbed_classes`, which every front end knows alike), so a class only its
DeviceClass shows to be NVIDIA's is declared under `extra-classes`, with its selector, for
the cluster.  A finding that the input's DeviceClass could clear is decided by the claim
alone where no DeviceClass of that name is among the objects, as a policy decides it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from dra_guard.contract.catalog import (
    ACCELERATOR_DRIVERS,
    DEVICE_CLASSES,
    NON_ACCELERATOR_CLASSES,
    NON_ACCELERATOR_DRIVERS,
    POD_LEVEL_DRIVERS,
    DeviceClass,
    class_selector,
)
from dra_guard.contract.scrubber import SCRUBBED_DEVICE_TYPES
from dra_guard.model.conjuncts import any_driver_term, attribute_term, conjunct_pattern, driver_term, has_conjunct
from dra_guard.model.selectors import analyse
from dra_guard.ruleapi.config import EXTRA_CLASSES, Config
from dra_guard.ruleapi.config import NON_ACCELERATOR_CLASSES as CONFIGURED_NON_ACCELERATOR_CLASSES

_DRIVER = re.compile(r"""device\s*\.\s*driver\s*==\s*(?:'([^'\\]*)'|"([^"\\]*)")""")


class ClassSelectors(NamedTuple):
    """A class's selectors and where they come from."""

    expressions: tuple[str, ...]
    #: "the input", "the configuration" or "the catalog".
    source: str


def configured_selectors(name: str, config: Config) -> ClassSelectors | None:
    """The class's selectors from the configuration or the catalog (not the input)."""
    extra = config.get(EXTRA_CLASSES).get(name)
    if extra is not None and extra.class_selector:
        return ClassSelectors((extra.class_selector,), "the configuration")
    known = class_selector(name)
    return ClassSelectors((known,), "the catalog") if known is not None else None


def selectors_of(name: str, config: Config, from_input: tuple[str, ...] | None) -> ClassSelectors | None:
    """The class's selectors: as configured (or in the catalog), else the input's DeviceClass
    of that name."""
    configured = configured_selectors(name, config)
    if configured is not None or from_input is None:
        return configured
    return ClassSelectors(from_input, "the input")


def redefinition(name: str, config: Config, from_input: Sequence[str]) -> str | None:
    """What is wrong with a DeviceClass `name` of the input whose selectors pin otherwise
    than the class dra-guard knows by that name (None: it knows none, or they agree)."""
    configured = configured_selectors(name, config)
    if configured is None:
        return None
    known = config.device_class(name)
    theirs, ours = class_pin(known, from_input), class_pin(known, configured.expressions)
    if (theirs is None) == (ours is None):
        return None
    if theirs is not None:
        said = f"pins {theirs}, which the class {configured.source} knows by this name does not"
    else:
        said = f"pins nothing, while the class {configured.source} knows by this name pins {ours}"
    return (
        f"DeviceClass {name} redefines a class dra-guard knows from {configured.source}: its selector {said}; "
        f"pins are decided by {configured.source}'s class (DeviceClasses are cluster-scoped: a tenant cannot "
        "replace the driver's, and the admission policies decide by the same class)"
    )


def pin_attributes(known: DeviceClass | None, expressions: Sequence[str]) -> tuple[tuple[str, str] | None, ...]:
    """The (domain, attribute) pairs a pin of this class may fix; None for any attribute
    (see the module's docstring)."""
    if known is not None:
        return ((known.domain, known.pin_attribute),)
    drivers = {a or b for expression in expressions for a, b in _DRIVER.findall(expression)}
    pairs = sorted({(c.domain, c.pin_attribute) for c in DEVICE_CLASSES.values() if c.domain in drivers})
    return tuple(pairs) or (None,)


def class_pin(known: DeviceClass | None, expressions: Sequence[str]) -> str | None:
    """The pin the class's selectors make (`gpu.nvidia.com/profile == '1g.12gb'`), or None."""
    for pair in pin_attributes(known, expressions):
        term = attribute_term(*pair) if pair is not None else attribute_term()
        for expression in expressions:
            if has_conjunct(expression, term):
                pins = [pin for pin in analyse(expression).pins if pair is None or (pin.domain, pin.attribute) == pair]
                return f"{pins[0].qualified_attribute} == {pins[0].value!r}" if pins else "a profile"
    return None


def selected_driver(expressions: Sequence[str], drivers: frozenset[str] = NON_ACCELERATOR_DRIVERS) -> str | None:
    """The driver among `drivers` that a top-level && conjunct of one of the selectors fixes
    `device.driver` to (the allocator ANDs a class's selectors), or None."""
    for driver in sorted(drivers):
        if any(has_conjunct(expression, driver_term(driver)) for expression in expressions):
            return driver
    return None


def fixes_driver(expressions: Sequence[str], drivers: frozenset[str]) -> bool:
    """Whether a top-level && conjunct of one of the selectors fixes `device.driver` to one of
    `drivers`: one RE2 pattern for the set (`driver_pattern`), as the admission policies ask it."""
    term = any_driver_term(drivers)
    return any(has_conjunct(expression, term) for expression in expressions)


def driver_pattern(drivers: frozenset[str]) -> str:
    """The RE2 pattern `fixes_driver` matches each selector against, for the policies' `matches`."""
    return conjunct_pattern(any_driver_term(drivers))


def overridable(name: str, config: Config) -> bool:
    """Whether the catalog knows `name` as a NIC's or a CPU's class only by the name its users
    give it (DRANET's `rdma`, `dranet`, `multinic`, ...: DRANET ships no class, each example
    names its own; dra-driver-cpu's and the example driver's charts are installed by the
    user too), so that the input's DeviceClass of that name may show it to select
    accelerators.  Not a class the configuration lists (the user's own word), nor one whose
    catalog entry names no driver (GKE's managed classes, NVIDIA's IMEX channel class, whose
    selector does fix gpu.nvidia.com)."""
    known = NON_ACCELERATOR_CLASSES.get(name)
    return known is not None and bool(known.driver) and name not in config.get(CONFIGURED_NON_ACCELERATOR_CLASSES)


def decided_by_input(name: str, config: Config) -> bool:
    """Whether the input's DeviceClass `name` decides if the class is an accelerator: the
    configuration and the catalog know nothing of the class, or the catalog knows it as a
    NIC or CPU class only by its conventional name (`overridable`)."""
    return bool(name) and (
        (config.is_accelerator(name) and config.device_class(name) is None) or overridable(name, config)
    )


def is_accelerator_class(name: str, config: Config, from_input: Sequence[str] | None) -> bool:
    """Whether requests of class `name` ask for an accelerator, the input's DeviceClass of
    that name (its selectors, None when there is none) considered (see the module)."""
    if overridable(name, config):
        # A class named `rdma` whose selector fixes gpu.nvidia.com selects GPUs.
        return from_input is not None and fixes_driver(from_input, ACCELERATOR_DRIVERS)
    if not config.is_accelerator(name):
        return False
    if from_input is None or not decided_by_input(name, config):
        return True
    return not fixes_driver(from_input, NON_ACCELERATOR_DRIVERS)


def selects_scrubbed_devices(expressions: Sequence[str]) -> bool:
    """Whether the selectors (ANDed, as the allocator does) fix, each in a top-level `&&`
    conjunct, `device.driver` to a driver the scrubber scrubs and that driver's device type
    to one it reaches (see the module)."""
    return any(
        any(has_conjunct(expression, driver_term(driver)) for expression in expressions)
        and any(has_conjunct(expression, attribute_term(driver, attribute, types)) for expression in expressions)
        for driver, (attribute, types) in sorted(SCRUBBED_DEVICE_TYPES.items())
    )


def scrubbed_class(name: str, config: Config, from_input: Sequence[str] | None) -> bool:
    """Whether the scrubber scrubs the devices of class `name`, by what its selectors select:
    those the configuration or the catalog gives where either knows the class, else those of
    the input's DeviceClass of that name (None when there is none); a class whose selectors
    are not known scrubs nothing (see the module)."""
    if decided_by_input(name, config):
        return from_input is not None and selects_scrubbed_devices(from_input)
    configured = configured_selectors(name, config)
    return configured is not None and selects_scrubbed_devices(configured.expressions)


def scrubbed_classes(config: Config) -> list[str]:
    """The classes the configuration and the catalog know whose devices the scrubber scrubs:
    what an admission policy, which sees no DeviceClass, counts as scrubbed."""
    configured: Mapping[str, DeviceClass] = config.get(EXTRA_CLASSES)
    known = sorted({*DEVICE_CLASSES, *configured})
    return [name for name in known if scrubbed_class(name, config, None)]


def scrub_hint(names: Sequence[str], config: Config) -> str:
    """How to show dra-guard that classes it does not count as scrubbed select only devices
    the scrubber scrubs, where they may: those it knows no driver of, and those the
    configuration declares without a selector."""
    unknown = [name for name in names if decided_by_input(name, config)]
    declared: Mapping[str, DeviceClass] = config.get(EXTRA_CLASSES)
    unselected = [
        name
        for name in names
        if name in declared
        and declared[name].domain in SCRUBBED_DEVICE_TYPES
        and configured_selectors(name, config) is None
    ]
    how = (
        "declare it under extra-classes with a pin-attribute in gpu.nvidia.com and the selector of its "
        "DeviceClass, which must fix device.driver == 'gpu.nvidia.com' and "
        "device.attributes['gpu.nvidia.com'].type == 'gpu' or 'mig' (its passthrough 'vfio' devices cannot be "
        "scrubbed)"
    )
    hint = ""
    if unknown:
        hint += (
            f"; dra-guard knows no driver of {', '.join(unknown)}: if its devices are NVIDIA's GPUs or MIG "
            f"instances, {how} (or check it with its DeviceClass, whose selector fixes both)"
        )
    if unselected:
        hint += (
            f"; extra-classes declares {', '.join(unselected)} without a selector, so dra-guard cannot tell which "
            f"of its driver's devices it selects: if they are NVIDIA's GPUs or MIG instances, {how}"
        )
    return hint


def is_pod_level_class(name: str, config: Config, from_input: Sequence[str] | None) -> bool:
    """Whether devices of class `name` attach to the pod rather than to a container (DRANET's
    NICs: `NonAcceleratorClass.pod_level`), so that no container needs to name its claim."""
    known = NON_ACCELERATOR_CLASSES.get(name)
    if known is not None:
        return known.pod_level and not is_accelerator_class(name, config, from_input)
    if from_input is None or not decided_by_input(name, config):
        return False
    return selected_driver(from_input, POD_LEVEL_DRIVERS) is not None
