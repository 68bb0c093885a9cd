"""Make the policy SDK deserialize a resource once per Analyze request, not once per policy,
and call only the policies that have something to report on it.

`pulumi_policy`'s Analyzer runs `deserialize_properties(MessageToDict(request.properties))`
and wraps the result in a new proxy for every policy in the pack.  With one policy per
rule that is seventeen conversions of the same message, and most of a resource's Analyze
time.  `install()` memoises those three steps on the identity of their arguments (the
same protobuf message object within one request), two entries per gRPC worker thread
(the resource's and its provider reference's), holding strong references so an identity
cannot be reused while cached; a Struct (the props) is converted by reading its values
directly, to the same dict.  The Analyzer's loop itself then runs without the policies
that say they would report nothing on the resource (`_leaving_out_the_silent`).

Only the dra-guard pack's own `__main__` installs this, so only our policies share the
read-only proxies (none of them writes to props), the resource options, and (through
`plain_props`) the plain values behind the proxies, which `pulumi_dra.props` reads
without the proxies' per-item checks.  If the SDK's internals ever change
shape, `install()` does nothing and the pack behaves exactly as the SDK alone would,
only slower; `install_or_warn()` then says so on stderr (stdout is the Pulumi CLI's: its
first line must be the port).  `python -m bench.pulumi_analyze` measures both ways.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, TextIO

import pulumi_policy.policy

_PATCHED = "_dra_guard_analyze_once"
_NEVER: Any = object()


class _LastCall(threading.local):
    """The arguments and result of a memoized function's last two calls (with different
    arguments) on this thread.

    Two, because the SDK converts the request's provider reference (`_get_provider_resource`,
    sent with every resource `pulumi preview` analyzes) with the same three functions
    between the resource's conversions of one policy and the next: with one entry each
    policy would convert the resource again, get a new proxy, and run the rules again.
    """

    # Class defaults, so a thread's first read needs no check; no caller passes _NEVER.
    call: tuple[tuple[Any, ...], Any] = ((_NEVER,), _NEVER)
    before: tuple[tuple[Any, ...], Any] = ((_NEVER,), _NEVER)


def _same(args: tuple[Any, ...], previous_args: tuple[Any, ...]) -> bool:
    """The very same argument objects (the wrapper tests the first two inline)."""
    return len(args) == len(previous_args) and all(a is b for a, b in zip(args, previous_args, strict=True))


def memoize_last_call(
    function: Callable[..., Any], last: _LastCall | None = None, unary_call: bool = False
) -> Callable[..., Any]:
    """Return a previous result when called again with the very same argument objects as
    one of the last two calls.

    `last` holds the calls remembered (one per thread); `plain_props` reads the proxies'.
    `unary_call`: the function is only ever called with one positional argument, and
    `last` only ever remembers such calls (a shorter path, taken about 34 times per resource).
    """
    remembered = last if last is not None else _LastCall()

    @functools.wraps(function)
    def unary(argument: Any) -> Any:
        # Every call remembered here had one argument (the class defaults too).
        (previous,), result = remembered.call
        if argument is previous:
            return result
        (earlier,), result = remembered.before
        if argument is earlier:
            return result
        result = function(argument)
        remembered.before, remembered.call = remembered.call, ((argument,), result)
        return result

    @functools.wraps(function)
    def wrapper(*args: Any) -> Any:
        # Called about sixty times per resource (three SDK steps, once per policy), nearly
        # always with the arguments of one of the last two calls: one and two arguments
        # (the SDK's calls) are compared inline, without a call per comparison.
        count = len(args)
        for previous_args, result in (remembered.call, remembered.before):
            if (
                len(previous_args) == count
                and (count == 0 or previous_args[0] is args[0])
                and (count < 2 or previous_args[1] is args[1])
                and (count < 3 or _same(args, previous_args))
            ):
                return result
        result = function(*args)
        remembered.before, remembered.call = remembered.call, (args, result)
        return result

    return unary if unary_call else wrapper


def install(sdk: Any = pulumi_policy.policy) -> bool:
    """Patch the SDK's Analyzer module; True if it was (or already is) patched."""
    if getattr(sdk, _PATCHED, False):
        return True
    json_format = getattr(sdk, "json_format", None)
    if not (
        callable(getattr(json_format, "MessageToDict", None))
        and callable(getattr(sdk, "deserialize_properties", None))
        and callable(getattr(sdk, "unknown_checking_proxy", None))
    ):
        return False
    # The SDK uses only MessageToDict from json_format; the rest is passed through.
    public = {name: getattr(json_format, name) for name in dir(json_format) if not name.startswith("_")}
    public["MessageToDict"] = memoize_last_call(_message_to_dict(public["MessageToDict"]), unary_call=True)
    sdk.json_format = SimpleNamespace(**public)
    # Not unary: the SDK's remediation path passes a second argument.
    sdk.deserialize_properties = memoize_last_call(sdk.deserialize_properties)
    sdk.unknown_checking_proxy = memoize_last_call(sdk.unknown_checking_proxy, _PROXIES_MADE, unary_call=True)
    servicer: Any = getattr(sdk, "_PolicyAnalyzerServicer", None)
    if callable(getattr(servicer, "_get_resource_options", None)):
        # Read from the request once too (a PolicyResourceOptions our policies never change).
        servicer._get_resource_options = memoize_last_call(servicer._get_resource_options)
    if callable(getattr(servicer, "_get_provider_resource", None)):
        # The provider reference likewise (a PolicyProviderResource our policies never read).
        servicer._get_provider_resource = memoize_last_call(servicer._get_provider_resource)
    if all(
        callable(getattr(servicer, name, None))
        for name in ("Analyze", "_get_policy_config", "_get_resource_options", "_get_provider_resource")
    ) and isinstance(getattr(sdk, "ResourceValidationPolicy", None), type):
        servicer.Analyze = _leaving_out_the_silent(servicer.Analyze, sdk)
    setattr(sdk, _PATCHED, True)
    return True


class _NoJsonSpelling(Exception):
    """A number JSON cannot write (infinite, NaN): the generic converter says so its way."""


def _struct_value(value: Any) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return value.string_value
    if kind == "struct_value":
        return {key: _struct_value(item) for key, item in value.struct_value.fields.items()}
    if kind == "number_value":
        number = value.number_value
        if number - number != 0.0:  # infinite or NaN
            raise _NoJsonSpelling
        return number
    if kind == "list_value":
        return [_struct_value(item) for item in value.list_value.values]
    if kind == "bool_value":
        return value.bool_value
    return None  # null_value, or no value at all (which JSON writes as null too)


def _message_to_dict(generic: Callable[..., Any]) -> Callable[..., Any]:
    """`json_format.MessageToDict`, with a `google.protobuf.Struct` (every resource's
    properties) read straight from its values: the generic converter looks up each value's
    field descriptor and dispatches on its type, a quarter of its time and of the pack's.
    The same dict: `tests/test_analyze_once.py` compares the two on generated structs."""

    @functools.wraps(generic)
    def message_to_dict(message: Any) -> Any:
        if message.DESCRIPTOR.full_name != "google.protobuf.Struct":
            return generic(message)
        try:
            return {key: _struct_value(item) for key, item in message.fields.items()}
        except _NoJsonSpelling:
            return generic(message)

    return message_to_dict


#: The servicer's list of policies, as the SDK's own Analyze reads it (a private name).
_POLICIES = "_PolicyAnalyzerServicer__policies"
_STACK_TAGS = "_PolicyAnalyzerServicer__stack_tags"


def _leaving_out_the_silent(analyze: Callable[..., Any], sdk: Any) -> Callable[..., Any]:
    """The SDK's `Analyze`, run without the policies that report nothing on the resource.

    The SDK calls every resource policy of the pack on every resource, and each call costs
    as much again as the policy's own work once the rules have run (a report function, the
    arguments, the conversions looked up again): seventeen of them cost more than the rules.
    A policy of ours says, without reporting, whether it would report nothing here
    (`says_nothing`: no finding, no advisory; the rules run once, as for `validate`); the
    SDK's own loop then runs over the others, so what it reports, and in which order, is
    what it would have reported.  Policies without a configuration only (a configured one
    is asked the SDK's way); anything unexpected leaves the loop as the SDK has it.
    """
    resource_policy = sdk.ResourceValidationPolicy

    def silent(servicer: Any, request: Any, policies: list[Any]) -> set[int]:
        args = None
        quiet: set[int] = set()
        for policy in policies:
            says_nothing = getattr(policy, "says_nothing", None)
            if says_nothing is None or not isinstance(policy, resource_policy):
                continue
            if servicer._get_policy_config(policy.name) is not None:
                continue
            if args is None:
                # What the SDK's loop gives the policy: the same (memoized) objects.
                props = sdk.unknown_checking_proxy(
                    sdk.deserialize_properties(sdk.json_format.MessageToDict(request.properties))
                )
                args = sdk.ResourceValidationArgs(
                    request.type,
                    props,
                    request.urn,
                    request.name,
                    servicer._get_resource_options(request),
                    servicer._get_provider_resource(request),
                    None,
                    getattr(servicer, _STACK_TAGS, None),
                )
            if says_nothing(args):
                quiet.add(id(policy))
        return quiet

    @functools.wraps(analyze)
    def leaving_out_the_silent(servicer: Any, request: Any, context: Any) -> Any:
        policies = getattr(servicer, _POLICIES, None)
        if not isinstance(policies, list):
            return analyze(servicer, request, context)
        try:
            quiet = silent(servicer, request, policies)
        except Exception:  # the SDK's loop meets it again, and reports it its own way
            quiet = set()
        if not quiet:
            return analyze(servicer, request, context)
        # A view of the servicer for this request alone (gRPC runs requests on four threads).
        view = object.__new__(type(servicer))
        view.__dict__.update(servicer.__dict__)
        setattr(view, _POLICIES, [policy for policy in policies if id(policy) not in quiet])
        return analyze(view, request, context)

    return leaving_out_the_silent


#: The last two proxies the patched `unknown_checking_proxy` made on each thread, and their plain values.
_PROXIES_MADE = _LastCall()


def plain_props(props: Any) -> Any:
    """The deserialized props behind `props` when it is one of the proxies made last on this
    thread, else None: the rules can read them without going through the proxy's checked reads."""
    for (plain, *_), proxied in (_PROXIES_MADE.call, _PROXIES_MADE.before):
        if proxied is props and plain is not _NEVER:
            return plain
    return None


def install_or_warn(sdk: Any = pulumi_policy.policy, stderr: TextIO | None = None) -> bool:
    """`install()`, with a warning on stderr when the SDK cannot be patched."""
    if install(sdk):
        return True
    (stderr or sys.stderr).write(
        "dra-guard policy pack: warning: pulumi_policy's Analyzer no longer has the shape "
        "pulumi_dra.analyze_once patches; each resource is deserialized once per policy "
        "(same results, slower)\n"
    )
    return False
