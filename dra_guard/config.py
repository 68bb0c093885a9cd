"""Public import path (docs/architecture.md, "Public import paths"): the options live in
`dra_guard.ruleapi.config`; parsing that reads the files options name, and finding and
loading a configuration file, in `dra_guard.read.config_file`."""

from dra_guard.read.config_file import (
    discover_config,
    find_config_file,
    load_config_file,
    parse_config,
    parse_policy_config,
    read_manifests,
)
from dra_guard.ruleapi.config import (
    ADMISSION_CLAIM_WRITERS,
    CLAIM_WRITERS,
    CONFIG_FILE_NAMES,
    CONSUMABLE_CAPACITY,
    CORE_OPTIONS,
    DISABLE,
    ENABLE,
    EXCLUDE,
    EXTENDED_RESOURCE_CLASSES,
    EXTRA_CLASSES,
    KUBERNETES_VERSION,
    MAX_FILE_BYTES,
    NON_ACCELERATOR_CLASSES,
    NON_WAIVABLE,
    Config,
    DeviceClassMap,
    OptionCatalog,
    policy_option,
)
from dra_guard.ruleapi.options import ConfigError, Option, ParseContext

__all__ = [
    "ADMISSION_CLAIM_WRITERS",
    "CLAIM_WRITERS",
    "CONFIG_FILE_NAMES",
    "CONSUMABLE_CAPACITY",
    "CORE_OPTIONS",
    "DISABLE",
    "ENABLE",
    "EXCLUDE",
    "EXTENDED_RESOURCE_CLASSES",
    "EXTRA_CLASSES",
    "KUBERNETES_VERSION",
    "MAX_FILE_BYTES",
    "NON_ACCELERATOR_CLASSES",
    "NON_WAIVABLE",
    "Config",
    "ConfigError",
    "DeviceClassMap",
    "Option",
    "OptionCatalog",
    "ParseContext",
    "discover_config",
    "find_config_file",
    "load_config_file",
    "parse_config",
    "parse_policy_config",
    "policy_option",
    "read_manifests",
]
