"""Synth-time enforcement: the dra-guard rules as a cdk8s validation.

`enforce(scope)` makes `cdk8s synth` (App.synth, Testing.synth, Chart.to_json) fail on
any non-compliant ApiObject under `scope` — raw objects, cdk8s-plus objects and ours —
with the construct path, the rule, the object and the fix in each message.

Our constructs are checked too even without `enforce()` (that catches later
`add_json_patch` edits): one validation per chart checks all of them, each with the
configuration of the nearest `enforce()` above it when there is one — the user's HMAC
key, extra legacy resources, disabled rules and `fail_on` — so that one configuration
applies to every object; a construct's own `hmac_key` verifies its tags only when that
configuration names no key.  What they made is read from the builders' dicts unless it
was edited (`constructs_dra/registry.py`), so this costs about what checking the dicts
costs, not a round trip into Node per object.  Other objects must be read from Node: an
`enforce()` on a chart or an app with many of them reads each chart whole
(`Chart.to_json`, one call) and, only when something fails, reads them one by one to
name each failing object's construct.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from types import CodeType, FrameType
from typing import Any

import jsii
from cdk8s import ApiObject, App, Chart
from constructs import Construct, IConstruct, IValidation
from jsii._kernel import Kernel

from constructs_dra.registry import (
    BuiltApiObject,
    ChartEntry,
    Member,
    chart_of,
    enforcing,
    finish_wiring,
    jsii_key,
    record_enforce,
)
from dra_guard.config import Config, parse_config
from dra_guard.engine import check_objects
from dra_guard.findings import Finding, Severity
from dra_guard.rules import RULES

_HMAC_KEY_OPTION = "hmac-key-env"
# A construct holds its HMAC key in memory.  It reaches the rules through the one config
# parser, as the value of the variable `hmac-key-env` names, so it is checked like any key.
_OWN_KEY_VARIABLE = "DRA_GUARD_CONSTRUCT_HMAC_KEY"


def format_finding(finding: Finding) -> str:
    """One validation message: where, which rule, which object, what is wrong, how to fix it."""
    return (
        f"{finding.rule} [{finding.severity.label}] {finding.object} (construct {finding.origin}, "
        f"at {finding.path or '/'}): {finding.message}. Fix: {finding.remediation}"
    )


@jsii.implements(IValidation)
class DraGuardValidation:
    """Checks every ApiObject under a scope together, so cross-object rules see them all."""

    def __init__(
        self, scope: IConstruct, config: Config | Mapping[str, Any] | None = None, fail_on: Severity = Severity.LOW
    ) -> None:
        self._scope = scope
        if config is None or isinstance(config, Config):
            self._config = config or Config()
        else:  # options as in .dra-guard.yaml; a bad one fails here, where it is written
            self._config = parse_config(config, RULES, f"dra-guard config of {scope.node.path or 'the app'}")
        self._fail_on = fail_on
        self._scope_path: str | None = None
        # cdk8s validates the whole app once more for each chart it renders: the same
        # objects, read again, give the same messages without running the rules again.
        self._last: tuple[list[str], list[Any], list[str]] | None = None
        self._clean: tuple[list[str], list[Any]] | None = None
        #: The synthesis this validation last answered in, and its answer (`_synthesis`).
        self._answered: tuple[str, list[str]] | None = None

    @property
    def config(self) -> Config:
        return self._config

    @property
    def fail_on(self) -> Severity:
        return self._fail_on

    def validate(self) -> list[str]:
        if _ChartRead.active:  # our own batched read below validates the app once more
            return []
        synthesis = _synthesis(sys._getframe(1))
        if synthesis is not None and self._answered is not None and self._answered[0] == synthesis:
            return list(self._answered[1])
        with _collector_paused():
            messages = self._messages()
        self._answered = None if synthesis is None else (synthesis, messages)
        return list(messages)

    def _messages(self) -> list[str]:
        scope_path = self._scope.node.path if self._scope_path is None else self._scope_path
        built: list[BuiltApiObject] = []
        others: list[ApiObject] = []
        charts: list[Chart] = []
        keys: list[str] = []
        children = self._scope.node.find_all()
        for child in children:
            if isinstance(child, ApiObject):
                keys.append(jsii_key(child))
                if isinstance(child, BuiltApiObject):
                    built.append(child)
                else:
                    others.append(child)
            elif isinstance(child, Chart):
                charts.append(child)
        finish_wiring(keys)  # the scrubber use_claim_template adds at synth is part of what is checked
        if self._batch_read_pays(built, others):
            manifests = _read_charts(charts, len(keys))
            if manifests is not None and self._passes(keys, manifests):
                return []
        return self._check_each(children, keys, scope_path)

    def _batch_read_pays(self, built: list[BuiltApiObject], others: list[ApiObject]) -> bool:
        """Whether reading the scope's charts whole costs fewer round trips into Node than
        reading each other object: a chart's read is one call, plus one call back into
        Python for each of our unedited objects (their `to_json`) and each validation."""
        if not isinstance(self._scope, (App, Chart)):  # a chart also renders objects outside the scope
            return False
        unedited = sum(1 for api_object in built if not api_object.edited)
        return len(others) > unedited + _BATCH_READ_MARGIN

    def _passes(self, keys: list[str], manifests: list[Any]) -> bool:
        """Whether the scope's objects, as its charts render them, fail no check.

        The charts list them in their own order, without construct paths, so this answers
        only yes or no: when anything fails, `_check_each` reads and reports each object."""
        if self._clean == (keys, manifests):
            return True
        report = check_objects(manifests, self._config)
        if report.errors or any(finding.severity >= self._fail_on for finding in report.findings):
            return False
        self._clean = (keys, manifests)
        return True

    def _check_each(self, children: list[IConstruct], keys: list[str], scope_path: str) -> list[str]:
        objects: list[Any] = []
        origins: list[str] = []
        skip: set[str] = set()
        others: dict[str, ApiObject] = {}
        for child in children:
            if isinstance(child, BuiltApiObject):
                objects.append(child.current())
                origins.append(child.path)
                # Our construct reports its own objects (_ChartSelfCheck), unless it, or
                # the object, is the scope enforced.
                if scope_path not in (child.owner_path, child.path):
                    skip.add(child.path)
            elif isinstance(child, ApiObject):
                objects.append(child.to_json())
                # Its path is another round trip: asked for only if a message names it.
                origins.append(_UNREAD_PATH + str(len(others)))
                others[origins[-1]] = child
        if self._last is not None and self._last[0] == keys and self._last[1] == objects:
            return list(self._last[2])
        report = check_objects(objects, self._config, origins=origins)
        paths = _PathsOf(others)
        messages = [f"{replace(error, file=paths.get(error.file))}" for error in report.errors]
        messages += [
            format_finding(replace(finding, origin=paths.get(finding.origin)))
            for finding in report.findings
            if finding.severity >= self._fail_on and finding.origin not in skip
        ]
        self._last = (keys, objects, messages)
        return list(messages)


#: How many more objects of others than of ours a scope needs before its charts are read
#: whole (each of ours is a call back into Python there; each validation of the app too).
_BATCH_READ_MARGIN = 8


class _ChartRead:
    """Whether `_read_charts` is running: `Chart.to_json` validates the whole app first,
    and our validations, asked again from inside it, have nothing to add there."""

    active = False


def _read_charts(charts: list[Chart], expected: int) -> list[Any] | None:
    """Every ApiObject of `charts` as synth renders it, one call into Node per chart;
    None when that fails (another validation's errors: synth reports them anyway) or
    does not account for `expected` objects."""
    if _ChartRead.active:
        return None
    _ChartRead.active = True
    try:
        manifests = [manifest for chart in charts for manifest in chart.to_json()]
    except Exception:  # jsii raises the JavaScript error as a plain Exception
        return None
    finally:
        _ChartRead.active = False
    return manifests if len(manifests) == expected else None


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a validation reads and checks the app.

    Reading a chart decodes every object into new dicts and lists (jsii makes two copies),
    and checking makes more: each collection of the oldest generation this triggers walks
    everything the app holds (its constructs' proxies, the objects read, the findings),
    and at 5,000 workloads those walks cost as much as the read.  What a read and a check
    make has no cycles (reference counting frees it); a cycle made meanwhile is collected
    once collection resumes.
    """
    if not gc.isenabled():  # the caller's choice: leave it
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _kernel_calls() -> frozenset[CodeType]:
    """The code of jsii's `Kernel.invoke` and `Kernel.sinvoke` (under their decorator), the
    calls into Node that the App's and Chart's synth methods and `Testing.synth` make."""
    codes = set()
    for name in ("invoke", "sinvoke"):
        code = getattr(getattr(getattr(Kernel, name, None), "__wrapped__", None), "__code__", None)
        if isinstance(code, CodeType):
            codes.add(code)
    return frozenset(codes)


_KERNEL_CALLS = _kernel_calls()


def _synthesis(frame: FrameType | None) -> str | None:
    """Which synthesis a validation is asked in: the id jsii gave the first callback of the
    call into Node the validation runs under (`App.synth_yaml`, `Chart.to_json`, ...);
    None when it is asked from Python, or jsii no longer has that shape.

    Within one synthesis cdk8s validates the whole app again for each chart it renders
    (`App.synth_yaml`, `Chart.to_json`): every object read and checked at the first ask,
    nothing can have changed by the next one except what a validation changes each time
    it runs, which cdk8s' own `App.synth` (one ask) takes as it is too.  Reading every chart
    again for each ask made enforce() cost (charts + 1) reads of the app.  Callback ids
    are never reused while Node runs, so a later synthesis is always read again.
    """
    while frame is not None:
        if frame.f_code in _KERNEL_CALLS:
            cbid = getattr(frame.f_locals.get("response"), "cbid", None)
            return cbid if isinstance(cbid, str) else None
        frame = frame.f_back
    return None


#: Stands for the construct path of an object until a message needs it (no path has NUL).
_UNREAD_PATH = "\0"


class _PathsOf:
    """Construct paths of other objects, read through jsii when first asked for."""

    def __init__(self, objects: Mapping[str, ApiObject]) -> None:
        self._objects = objects
        self._paths: dict[str, str] = {}

    def get(self, origin: str | None) -> Any:
        if origin is None or origin not in self._objects:
            return origin
        path = self._paths.get(origin)
        if path is None:
            path = self._paths[origin] = self._objects[origin].node.path
        return path


def enforce(
    scope: Construct, config: Config | Mapping[str, Any] | None = None, fail_on: str = "medium"
) -> DraGuardValidation:
    """Fail synthesis when any ApiObject under `scope` breaks a dra-guard rule.

    `config` is a `Config` (e.g. from `dra_guard.config.load_config_file`) or the options
    as .dra-guard.yaml writes them (`{"admin-namespaces": ["gpu-ops"]}`); a bad option
    raises `ConfigError` with the same message as the CLI's.  `fail_on` is the lowest
    severity that fails; the default, `medium`, is the CLI's and the cdk8s-cli plugin's
    too (a template that lives outside the app is only `low`).  Returns the validation,
    which can also be called directly (`.validate()` lists the messages).
    """
    validation = DraGuardValidation(scope, config, Severity.parse(fail_on))
    scope.node.add_validation(validation)
    validation._scope_path = record_enforce(scope, validation)
    return validation


@jsii.implements(IValidation)
class _ChartSelfCheck:
    """Our constructs' objects in one chart, each checked with the configuration that
    applies to it: one engine run per distinct configuration, usually one per chart.

    Resolved when cdk8s validates (at synth), not when the constructs are built, so an
    `enforce()` called after them still applies.  The user's configuration wins for
    every option it sets; a construct's own facts (its key, the release and capacity it
    was built for) fill in the rest.
    """

    def __init__(self, entry: ChartEntry) -> None:
        self._entry = entry
        # cdk8s validates the whole app once more for each chart it renders: the same
        # objects under the same configuration give the same messages.  An unedited
        # object's dict never changes, and is the same dict each time.
        self._last: dict[tuple[Any, ...], tuple[list[Any], list[str]]] = {}

    def validate(self) -> list[str]:
        if _ChartRead.active:  # asked from inside an enforce() validation's read of the charts
            return []
        # use_claim_template may wire one of our objects too (a second claim and its scrubber).
        finish_wiring(jsii_key(api_object) for member in self._entry.members for api_object in member.objects)
        groups: dict[tuple[int, str], tuple[Config, Severity, list[BuiltApiObject], DraGuardValidation | None]] = {}
        for member in self._entry.members:
            applying = enforcing(self._entry.app, member.path)
            key = (id(applying), member.values_key)
            group = groups.get(key)
            if group is None:
                config, fail_on = _member_config(member, applying)
                group = groups[key] = (config, fail_on, [], applying)
            group[2].extend(member.objects)
        messages: list[str] = []
        for (_, values_key), (config, fail_on, objects, applying) in groups.items():
            current = [api_object.current() for api_object in objects]
            cache_key = (applying, values_key, *map(id, objects))
            last = self._last.get(cache_key)
            if last is not None and last[0] == current:
                messages += last[1]
                continue
            report = check_objects(current, config, origins=[api_object.path for api_object in objects])
            group_messages = [f"{error}" for error in report.errors]
            group_messages += [format_finding(finding) for finding in report.findings if finding.severity >= fail_on]
            self._last[cache_key] = (current, group_messages)
            messages += group_messages
        return messages


def _member_config(member: Member, applying: DraGuardValidation | None) -> tuple[Config, Severity]:
    user = applying.config if applying is not None else Config()
    fail_on = applying.fail_on if applying is not None else Severity.LOW
    own_values = {key: value for key, value in member.values.items() if key not in user.values}
    if not own_values:
        return user, fail_on
    own = parse_config(own_values, RULES, f"construct {member.path}", environ=member.environ)
    return Config({**own.values, **user.values}, user.source or own.source), fail_on


def self_checked_chart(scope: IConstruct) -> tuple[ChartEntry, str]:
    """The chart `scope` is in, with its self-check attached, and `scope`'s path."""
    return chart_of(scope, lambda entry: entry.chart.node.add_validation(_ChartSelfCheck(entry)))


def validate_self(
    construct: Construct,
    entry: ChartEntry,
    path: str,
    objects: list[BuiltApiObject],
    hmac_key: str | bytes | None = None,
    *,
    kubernetes_version: str | None = None,
    consumable_capacity: bool | None = None,
) -> None:
    """Put one of our constructs, at `path` in `entry`'s chart, under the chart's self-check.

    Its objects are compliant when built; this catches later edits (`add_json_patch`, ...),
    with the configuration of the nearest `enforce()` above the construct, if any.
    The construct's own key verifies its tags, and its objects are checked for the
    Kubernetes release they were built for, where that configuration says nothing else.
    """
    values: dict[str, Any] = {}
    environ: dict[str, str | bytes] = {}
    if hmac_key:
        values[_HMAC_KEY_OPTION] = _OWN_KEY_VARIABLE
        environ[_OWN_KEY_VARIABLE] = hmac_key
    if kubernetes_version is not None:
        values["kubernetes-version"] = kubernetes_version
    if consumable_capacity is not None:
        values["consumable-capacity"] = consumable_capacity
    values_key = repr((sorted(values.items()), sorted(environ.items())))
    if values_key not in _VALID_VALUES:  # a bad value fails now; the same values pass again
        parse_config(values, RULES, f"construct {path}", environ=environ)
        if not environ:  # a key is not kept beyond its construct
            _VALID_VALUES.add(values_key)
    entry.members.append(Member(construct, path, objects, values, environ, values_key))


_VALID_VALUES: set[str] = set()
