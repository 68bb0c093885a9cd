"""Fields each resource.k8s.io version has, per DRA type (generated; do not edit).

Union over Kubernetes 1.31.0 - 1.37.0, from the official OpenAPI schemas.
Regenerate with: python tools/gen_dra_fields.py > dra_guard/dra_fields.py
"""

FIELDS: dict[str, dict[str, frozenset[str]]] = {
    "resource.k8s.io/v1": {
        "CELDeviceSelector": frozenset(["expression"]),
        "DeviceClaim": frozenset(["config", "constraints", "requests"]),
        "DeviceClaimConfiguration": frozenset(["opaque", "requests"]),
        "DeviceConstraint": frozenset(["distinctAttribute", "matchAttribute", "requests"]),
        "DeviceRequest": frozenset(["exactly", "firstAvailable", "name"]),
        "DeviceSelector": frozenset(["cel"]),
        "DeviceSubRequest": frozenset(
            [
                "allocationMode",
                "capacity",
                "count",
                "derivedAttributes",
                "deviceClassName",
                "name",
                "selectors",
                "tolerations",
            ]
        ),
        "ExactDeviceRequest": frozenset(
            [
                "adminAccess",
                "allocationMode",
                "capacity",
                "count",
                "derivedAttributes",
                "deviceClassName",
                "selectors",
                "tolerations",
            ]
        ),
        "ResourceClaimSpec": frozenset(["devices"]),
        "ResourceClaimTemplateSpec": frozenset(["metadata", "spec"]),
    },
    "resource.k8s.io/v1alpha3": {
        "CELDeviceSelector": frozenset(["expression"]),
        "DeviceClaim": frozenset(["config", "constraints", "requests"]),
        "DeviceClaimConfiguration": frozenset(["opaque", "requests"]),
        "DeviceConstraint": frozenset(["matchAttribute", "requests"]),
        "DeviceRequest": frozenset(
            [
                "adminAccess",
                "allocationMode",
                "count",
                "deviceClassName",
                "firstAvailable",
                "name",
                "selectors",
                "tolerations",
            ]
        ),
        "DeviceSelector": frozenset(["cel"]),
        "DeviceSubRequest": frozenset(
            ["allocationMode", "count", "deviceClassName", "name", "selectors", "tolerations"]
        ),
        "ResourceClaimSpec": frozenset(["controller", "devices"]),
        "ResourceClaimTemplateSpec": frozenset(["metadata", "spec"]),
    },
    "resource.k8s.io/v1beta1": {
        "CELDeviceSelector": frozenset(["expression"]),
        "DeviceClaim": frozenset(["config", "constraints", "requests"]),
        "DeviceClaimConfiguration": frozenset(["opaque", "requests"]),
        "DeviceConstraint": frozenset(["distinctAttribute", "matchAttribute", "requests"]),
        "DeviceRequest": frozenset(
            [
                "adminAccess",
                "allocationMode",
                "capacity",
                "count",
                "derivedAttributes",
                "deviceClassName",
                "firstAvailable",
                "name",
                "selectors",
                "tolerations",
            ]
        ),
        "DeviceSelector": frozenset(["cel"]),
        "DeviceSubRequest": frozenset(
            [
                "allocationMode",
                "capacity",
                "count",
                "derivedAttributes",
                "deviceClassName",
                "name",
                "selectors",
                "tolerations",
            ]
        ),
        "ResourceClaimSpec": frozenset(["devices"]),
        "ResourceClaimTemplateSpec": frozenset(["metadata", "spec"]),
    },
    "resource.k8s.io/v1beta2": {
        "CELDeviceSelector": frozenset(["expression"]),
        "DeviceClaim": frozenset(["config", "constraints", "requests"]),
        "DeviceClaimConfiguration": frozenset(["opaque", "requests"]),
        "DeviceConstraint": frozenset(["distinctAttribute", "matchAttribute", "requests"]),
        "DeviceRequest": frozenset(["exactly", "firstAvailable", "name"]),
        "DeviceSelector": frozenset(["cel"]),
        "DeviceSubRequest": frozenset(
            [
                "allocationMode",
                "capacity",
                "count",
                "derivedAttributes",
                "deviceClassName",
                "name",
                "selectors",
                "tolerations",
            ]
        ),
        "ExactDeviceRequest": frozenset(
            [
                "adminAccess",
                "allocationMode",
                "capacity",
                "count",
                "derivedAttributes",
                "deviceClassName",
                "selectors",
                "tolerations",
            ]
        ),
        "ResourceClaimSpec": frozenset(["devices"]),
        "ResourceClaimTemplateSpec": frozenset(["metadata", "spec"]),
    },
}
