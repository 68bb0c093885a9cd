"""The catalog says what the drivers publish: checked, class by class, against the devices of
the driver fixtures (tests/fixtures/slices, written from each driver's source) and the
drivers' own DeviceClasses (tests/fixtures/deviceclasses)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from dra_guard.contract.catalog import (
    CHART_EXTENDED_RESOURCES,
    DEVICE_CLASSES,
    NON_ACCELERATOR_CLASSES,
    PCIE_ROOT,
    DeviceClass,
)
from dra_guard.model.allocation import Allocator, Alternative, Device
from dra_guard.ruleapi.config import Config
from tests.test_allocation import FIXTURES as FIXTURES_DIR
from tests.test_allocation import device_classes, inventory

#: The fixtures that hold devices of each class; a class whose topology attribute is
#: conditional has a fixture with it and, where one exists, one without.
FIXTURES: dict[str, tuple[str, ...]] = {
    "mig.nvidia.com": ("nvidia-a100-mig",),
    "gpu.nvidia.com": ("nvidia-8gpu-pcieroot", "nvidia-4gpu-no-pcieroot"),
    "vfio.gpu.nvidia.com": ("nvidia-vfio",),
    "tpu.google.com": ("tpu-v6e-2x2", "tpu-v6e-2x4"),
    "gpu.amd.com": ("amd-mi300x-partitioned",),
    "gpu.intel.com": ("intel-gpu",),
    "gpu-vfio.intel.com": ("intel-gpu",),
    "gaudi.intel.com": ("intel-gaudi",),
    "gpu.example.com": ("example-driver", "example-consumable-capacity"),
}
NON_ACCELERATOR_FIXTURES = {
    "compute-domain-daemon.nvidia.com": "nvidia-compute-domain",
    "compute-domain-default-channel.nvidia.com": "nvidia-compute-domain",
    "net.example.com": "example-net",
    "cpu.example.com": "example-cpu",
    # DRANET's own EKS example slice (EFA and ENA NICs); the eRDMA class needs Alibaba's attributes.
    "multinic": "dranet-aws-efa",
    "dranet": "dranet-aws-efa",
    "dranet.net": "dranet-aws-efa",
    "dra.net": "dranet-aws-efa",
    "rdma": "dranet-aws-efa",
    "dranet-rdma-for-mpi": "dranet-aws-efa",
    "efa.networking.k8s.aws": "dranet-aws-efa",
}


def devices_of(device_class: str, fixtures: Sequence[str]) -> list[Device]:
    """The fixture devices the driver's own DeviceClass selects."""
    everything = Alternative(device_class, device_class, selectors=(), mode="All", count=1)
    found: list[Device] = []
    for name in fixtures:
        slices = inventory(name)
        found += Allocator(slices, device_classes()).candidates(everything, slices.devices)
    return found


def test_every_catalog_class_is_checked_against_fixtures() -> None:
    assert set(FIXTURES) == set(DEVICE_CLASSES)
    assert set(NON_ACCELERATOR_FIXTURES) <= set(NON_ACCELERATOR_CLASSES)


@pytest.mark.parametrize("name", sorted(DEVICE_CLASSES))
def test_the_class_selector_is_the_drivers_own(name: str) -> None:
    assert (DEVICE_CLASSES[name].class_selector,) == device_classes()[name]


@pytest.mark.parametrize("name", sorted(DEVICE_CLASSES))
def test_fixture_devices_carry_the_pin_the_catalog_claims(name: str) -> None:
    known = DEVICE_CLASSES[name]
    devices = devices_of(name, FIXTURES[name])
    assert devices, f"no fixture device of class {name}"
    for device in devices:
        value = device.attributes.get(known.qualified_pin_attribute)
        assert isinstance(value, str), (device.label, known.qualified_pin_attribute)
        if known.pin_value_pattern is not None:
            assert known.pin_value_pattern.fullmatch(value), (device.label, value)
        if known.known_pin_values and known.pin_value_pattern is None:
            assert value in known.known_pin_values, (device.label, value)


def _check_topology(known: DeviceClass, devices: list[Device]) -> None:
    for attribute in known.topology:
        carrying = [device for device in devices if attribute.name in device.attributes]
        if attribute.published == "always":
            assert len(carrying) == len(devices), f"{known.name}: {attribute.name} missing on some device"
        else:
            assert carrying, f"{known.name}: no fixture shows {attribute.name} published"
    for name in known.never_published:
        assert not any(name in device.attributes for device in devices), f"{known.name} publishes {name}"
    if known.default_alignment is not None:
        assert known.topology_attribute(known.default_alignment) is not None
        assert known.topology_attribute(known.default_alignment).published == "always"  # type: ignore[union-attr]


@pytest.mark.parametrize("name", sorted(DEVICE_CLASSES))
def test_fixture_devices_carry_the_topology_the_catalog_claims(name: str) -> None:
    _check_topology(DEVICE_CLASSES[name], devices_of(name, FIXTURES[name]))


def test_conditional_pcie_root_is_really_absent_on_some_nodes() -> None:
    with_root, without_root = (devices_of("gpu.nvidia.com", (fixture,)) for fixture in FIXTURES["gpu.nvidia.com"])
    assert all(PCIE_ROOT in device.attributes for device in with_root)
    assert not any(PCIE_ROOT in device.attributes for device in without_root)


def test_amd_parent_device_id_is_on_partitions_only() -> None:
    devices = devices_of("gpu.amd.com", FIXTURES["gpu.amd.com"])
    partitions = [device for device in devices if device.attributes["gpu.amd.com/type"] == "amdgpu-partition"]
    whole = [device for device in devices if device.attributes["gpu.amd.com/type"] == "amdgpu"]
    assert partitions and whole
    assert all("gpu.amd.com/parentDeviceID" in device.attributes for device in partitions)
    assert not any("gpu.amd.com/parentDeviceID" in device.attributes for device in whole)


def test_tpu_generations_are_what_accelerator_gen_returns() -> None:
    known = DEVICE_CLASSES["tpu.google.com"]
    assert known.pin_value_pattern is not None
    for value in ("v3", "v4", "v4lite", "v5lite", "v5litepod", "v5p", "v6e", "tpu7x"):
        assert known.pin_value_pattern.fullmatch(value)
    for value in ("v5e", "v2", "tpu-v6e-slice", "V6E"):
        assert not known.pin_value_pattern.fullmatch(value)


@pytest.mark.parametrize(("name", "fixture"), sorted(NON_ACCELERATOR_FIXTURES.items()))
def test_non_accelerator_classes_select_their_drivers_devices_and_are_not_accelerators(name: str, fixture: str) -> None:
    devices = devices_of(name, (fixture,))
    assert devices and all(device.driver == NON_ACCELERATOR_CLASSES[name].driver for device in devices)
    assert not Config().is_accelerator(name)


def test_unknown_classes_stay_accelerators() -> None:
    assert Config().is_accelerator("fpga.example.org")
    assert all(Config().is_accelerator(name) for name in DEVICE_CLASSES)


def test_attribute_domains_fit_the_api_limit() -> None:
    for known in DEVICE_CLASSES.values():
        for attribute in (known.qualified_pin_attribute, *known.topology_attributes, *known.never_published):
            assert len(attribute.partition("/")[0]) <= 63


def test_the_consumable_capacity_fixture_is_shareable() -> None:
    assert all(device.allow_multiple_allocations for device in inventory("example-consumable-capacity").devices)
    assert not any(device.allow_multiple_allocations for device in inventory("example-driver").devices)


@pytest.mark.parametrize(
    "name", sorted(name for name, known in NON_ACCELERATOR_CLASSES.items() if known.class_selector)
)
def test_non_accelerator_class_selectors_are_the_drivers_own(name: str) -> None:
    """`check --slices` evaluates them for the non-accelerator requests of a claim."""
    assert (NON_ACCELERATOR_CLASSES[name].class_selector,) == device_classes()[name]


def _extended_resource_names(path: Path) -> dict[str, str]:
    found = {}
    for obj in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        mapped = obj["spec"].get("extendedResourceName") if obj else None
        if mapped:
            found[mapped] = obj["metadata"]["name"]
    return found


def test_chart_extended_resources_are_what_the_charts_render() -> None:
    """The name each chart can map, and whether its default render maps it (KEP-5004)."""
    folder = FIXTURES_DIR / "deviceclasses"
    opted_in: dict[str, str] = {}
    for path in sorted(folder.glob("*-extended-resource*.yaml")):
        opted_in.update(_extended_resource_names(path))
    for name, (device_class, chart) in CHART_EXTENDED_RESOURCES.items():
        default = _extended_resource_names(folder / f"{device_class}.yaml")
        assert (default.get(name) == device_class) is chart.by_default, name
        assert (default.get(name) or opted_in.get(name)) == device_class, name
