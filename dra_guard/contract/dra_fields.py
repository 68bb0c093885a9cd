"""Fields of each DRA type per resource.k8s.io version, with the Kubernetes releases
whose official OpenAPI schema has them (generated; do not edit).

Regenerate with: python tools/gen_dra_fields.py > dra_guard/contract/dra_fields.py
"""

#: The releases the table covers, oldest first.
RELEASES = ("1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37")

#: apiVersion -> type -> field -> (first release, last release) that has it.
FIELDS: dict[str, dict[str, dict[str, tuple[str, str]]]] = {
    "resource.k8s.io/v1": {
        "CELDeviceSelector": {
            "expression": ("1.34", "1.37"),
        },
        "CapacityRequirements": {
            "requests": ("1.34", "1.37"),
        },
        "DeviceClaim": {
            "config": ("1.34", "1.37"),
            "constraints": ("1.34", "1.37"),
            "requests": ("1.34", "1.37"),
        },
        "DeviceClaimConfiguration": {
            "opaque": ("1.34", "1.37"),
            "requests": ("1.34", "1.37"),
        },
        "DeviceConstraint": {
            "distinctAttribute": ("1.34", "1.37"),
            "matchAttribute": ("1.34", "1.37"),
            "requests": ("1.34", "1.37"),
        },
        "DeviceRequest": {
            "exactly": ("1.34", "1.37"),
            "firstAvailable": ("1.34", "1.37"),
            "name": ("1.34", "1.37"),
        },
        "DeviceSelector": {
            "cel": ("1.34", "1.37"),
        },
        "DeviceSubRequest": {
            "allocationMode": ("1.34", "1.37"),
            "capacity": ("1.34", "1.37"),
            "count": ("1.34", "1.37"),
            "derivedAttributes": ("1.37", "1.37"),
            "deviceClassName": ("1.34", "1.37"),
            "name": ("1.34", "1.37"),
            "selectors": ("1.34", "1.37"),
            "tolerations": ("1.34", "1.37"),
        },
        "DeviceToleration": {
            "effect": ("1.34", "1.37"),
            "key": ("1.34", "1.37"),
            "operator": ("1.34", "1.37"),
            "tolerationSeconds": ("1.34", "1.37"),
            "value": ("1.34", "1.37"),
        },
        "ExactDeviceRequest": {
            "adminAccess": ("1.34", "1.37"),
            "allocationMode": ("1.34", "1.37"),
            "capacity": ("1.34", "1.37"),
            "count": ("1.34", "1.37"),
            "derivedAttributes": ("1.37", "1.37"),
            "deviceClassName": ("1.34", "1.37"),
            "selectors": ("1.34", "1.37"),
            "tolerations": ("1.34", "1.37"),
        },
        "OpaqueDeviceConfiguration": {
            "driver": ("1.34", "1.37"),
            "parameters": ("1.34", "1.37"),
        },
        "ResourceClaimSpec": {
            "devices": ("1.34", "1.37"),
        },
        "ResourceClaimTemplateSpec": {
            "metadata": ("1.34", "1.37"),
            "spec": ("1.34", "1.37"),
        },
    },
    "resource.k8s.io/v1alpha3": {
        "CELDeviceSelector": {
            "expression": ("1.31", "1.34"),
        },
        "DeviceClaim": {
            "config": ("1.31", "1.33"),
            "constraints": ("1.31", "1.33"),
            "requests": ("1.31", "1.33"),
        },
        "DeviceClaimConfiguration": {
            "opaque": ("1.31", "1.33"),
            "requests": ("1.31", "1.33"),
        },
        "DeviceConstraint": {
            "matchAttribute": ("1.31", "1.33"),
            "requests": ("1.31", "1.33"),
        },
        "DeviceRequest": {
            "adminAccess": ("1.31", "1.33"),
            "allocationMode": ("1.31", "1.33"),
            "count": ("1.31", "1.33"),
            "deviceClassName": ("1.31", "1.33"),
            "firstAvailable": ("1.33", "1.33"),
            "name": ("1.31", "1.33"),
            "selectors": ("1.31", "1.33"),
            "tolerations": ("1.33", "1.33"),
        },
        "DeviceSelector": {
            "cel": ("1.31", "1.34"),
        },
        "DeviceSubRequest": {
            "allocationMode": ("1.33", "1.33"),
            "count": ("1.33", "1.33"),
            "deviceClassName": ("1.33", "1.33"),
            "name": ("1.33", "1.33"),
            "selectors": ("1.33", "1.33"),
            "tolerations": ("1.33", "1.33"),
        },
        "DeviceToleration": {
            "effect": ("1.33", "1.33"),
            "key": ("1.33", "1.33"),
            "operator": ("1.33", "1.33"),
            "tolerationSeconds": ("1.33", "1.33"),
            "value": ("1.33", "1.33"),
        },
        "OpaqueDeviceConfiguration": {
            "driver": ("1.31", "1.33"),
            "parameters": ("1.31", "1.33"),
        },
        "ResourceClaimSpec": {
            "controller": ("1.31", "1.31"),
            "devices": ("1.31", "1.33"),
        },
        "ResourceClaimTemplateSpec": {
            "metadata": ("1.31", "1.33"),
            "spec": ("1.31", "1.33"),
        },
    },
    "resource.k8s.io/v1beta1": {
        "CELDeviceSelector": {
            "expression": ("1.32", "1.37"),
        },
        "CapacityRequirements": {
            "requests": ("1.34", "1.37"),
        },
        "DeviceClaim": {
            "config": ("1.32", "1.37"),
            "constraints": ("1.32", "1.37"),
            "requests": ("1.32", "1.37"),
        },
        "DeviceClaimConfiguration": {
            "opaque": ("1.32", "1.37"),
            "requests": ("1.32", "1.37"),
        },
        "DeviceConstraint": {
            "distinctAttribute": ("1.34", "1.37"),
            "matchAttribute": ("1.32", "1.37"),
            "requests": ("1.32", "1.37"),
        },
        "DeviceRequest": {
            "adminAccess": ("1.32", "1.37"),
            "allocationMode": ("1.32", "1.37"),
            "capacity": ("1.34", "1.37"),
            "count": ("1.32", "1.37"),
            "derivedAttributes": ("1.37", "1.37"),
            "deviceClassName": ("1.32", "1.37"),
            "firstAvailable": ("1.33", "1.37"),
            "name": ("1.32", "1.37"),
            "selectors": ("1.32", "1.37"),
            "tolerations": ("1.33", "1.37"),
        },
        "DeviceSelector": {
            "cel": ("1.32", "1.37"),
        },
        "DeviceSubRequest": {
            "allocationMode": ("1.33", "1.37"),
            "capacity": ("1.34", "1.37"),
            "count": ("1.33", "1.37"),
            "derivedAttributes": ("1.37", "1.37"),
            "deviceClassName": ("1.33", "1.37"),
            "name": ("1.33", "1.37"),
            "selectors": ("1.33", "1.37"),
            "tolerations": ("1.33", "1.37"),
        },
        "DeviceToleration": {
            "effect": ("1.33", "1.37"),
            "key": ("1.33", "1.37"),
            "operator": ("1.33", "1.37"),
            "tolerationSeconds": ("1.33", "1.37"),
            "value": ("1.33", "1.37"),
        },
        "OpaqueDeviceConfiguration": {
            "driver": ("1.32", "1.37"),
            "parameters": ("1.32", "1.37"),
        },
        "ResourceClaimSpec": {
            "devices": ("1.32", "1.37"),
        },
        "ResourceClaimTemplateSpec": {
            "metadata": ("1.32", "1.37"),
            "spec": ("1.32", "1.37"),
        },
    },
    "resource.k8s.io/v1beta2": {
        "CELDeviceSelector": {
            "expression": ("1.33", "1.37"),
        },
        "CapacityRequirements": {
            "requests": ("1.34", "1.37"),
        },
        "DeviceClaim": {
            "config": ("1.33", "1.37"),
            "constraints": ("1.33", "1.37"),
            "requests": ("1.33", "1.37"),
        },
        "DeviceClaimConfiguration": {
            "opaque": ("1.33", "1.37"),
            "requests": ("1.33", "1.37"),
        },
        "DeviceConstraint": {
            "distinctAttribute": ("1.34", "1.37"),
            "matchAttribute": ("1.33", "1.37"),
            "requests": ("1.33", "1.37"),
        },
        "DeviceRequest": {
            "exactly": ("1.33", "1.37"),
            "firstAvailable": ("1.33", "1.37"),
            "name": ("1.33", "1.37"),
        },
        "DeviceSelector": {
            "cel": ("1.33", "1.37"),
        },
        "DeviceSubRequest": {
            "allocationMode": ("1.33", "1.37"),
            "capacity": ("1.34", "1.37"),
            "count": ("1.33", "1.37"),
            "derivedAttributes": ("1.37", "1.37"),
            "deviceClassName": ("1.33", "1.37"),
            "name": ("1.33", "1.37"),
            "selectors": ("1.33", "1.37"),
            "tolerations": ("1.33", "1.37"),
        },
        "DeviceToleration": {
            "effect": ("1.33", "1.37"),
            "key": ("1.33", "1.37"),
            "operator": ("1.33", "1.37"),
            "tolerationSeconds": ("1.33", "1.37"),
            "value": ("1.33", "1.37"),
        },
        "ExactDeviceRequest": {
            "adminAccess": ("1.33", "1.37"),
            "allocationMode": ("1.33", "1.37"),
            "capacity": ("1.34", "1.37"),
            "count": ("1.33", "1.37"),
            "derivedAttributes": ("1.37", "1.37"),
            "deviceClassName": ("1.33", "1.37"),
            "selectors": ("1.33", "1.37"),
            "tolerations": ("1.33", "1.37"),
        },
        "OpaqueDeviceConfiguration": {
            "driver": ("1.33", "1.37"),
            "parameters": ("1.33", "1.37"),
        },
        "ResourceClaimSpec": {
            "devices": ("1.33", "1.37"),
        },
        "ResourceClaimTemplateSpec": {
            "metadata": ("1.33", "1.37"),
            "spec": ("1.33", "1.37"),
        },
    },
}
