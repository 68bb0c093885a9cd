"""Public import path (docs/architecture.md, "Public import paths"): the code lives in
`dra_guard.building.builders`, with the scrubber's facts (`dra_guard.contract.scrubber`) and
its image check, which the front ends use with the builders."""

# `X as X`: an explicit re-export (mypy --strict exports nothing imported otherwise).
from dra_guard.building.builders import *  # noqa: F403
from dra_guard.contract.scrubber import DEFAULT_SCRUB_IMAGE as DEFAULT_SCRUB_IMAGE  # noqa: PLC0414
from dra_guard.contract.scrubber import SCRUB_CONTAINER_NAME as SCRUB_CONTAINER_NAME  # noqa: PLC0414
from dra_guard.contract.scrubber import scrubbed as scrubbed  # noqa: PLC0414
from dra_guard.contract.validators import require_scrub_image as require_scrub_image  # noqa: PLC0414
