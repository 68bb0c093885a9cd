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
from collections.abc import Callable, Iterator, Mapping
from types import SimpleNamespace
from typing import Any, TextIO

import pulumi_policy.deserialize
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
    sdk.deserialize_properties = _plain_as_it_is(sdk.deserialize_properties)
    sdk.unknown_checking_proxy = memoize_last_call(
        _on_demand(sdk.unknown_checking_proxy), _PROXIES_MADE, unary_call=True
    )
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


#: The key by which Pulumi marks a secret, an asset or an archive inside a map: the SDK's
#: deserializer turns such a map into something else, and copies every other value as it is.
_SIGNATURE_KEY: Any = getattr(pulumi_policy.deserialize, "SPECIAL_SIG_KEY", None)


class _NotPlain(Exception):
    """A number JSON cannot write (infinite, NaN), or a map Pulumi marks: the generic
    converter (which refuses the number its way) and the SDK's deserializer take it."""


def _struct(fields: Any) -> dict[str, Any]:
    # Keys, then each value by its key: the map's items() and `in` are the generic Mapping
    # methods, a Python step per entry (a third of the time of reading a resource's props).
    plain = {}
    for key in fields:
        if key == _SIGNATURE_KEY:
            raise _NotPlain
        plain[key] = _struct_value(fields[key])
    return plain


def _struct_value(value: Any) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return value.string_value
    if kind == "struct_value":
        return _struct(value.struct_value.fields)
    if kind == "number_value":
        number = value.number_value
        if number - number != 0.0:  # infinite or NaN
            raise _NotPlain
        return number
    if kind == "list_value":
        return [_struct_value(item) for item in value.list_value.values]
    if kind == "bool_value":
        return value.bool_value
    return None  # null_value, or no value at all (which JSON writes as null too)


class _PlainMade(threading.local):
    """The last two dicts the Struct reader made on this thread (it makes them only of
    values the SDK's deserializer would copy as they are)."""

    made: tuple[Any, Any] = (_NEVER, _NEVER)


_PLAIN = _PlainMade()


def _plain_as_it_is(original: Callable[..., Any]) -> Callable[..., Any]:
    """`deserialize_properties`, memoized, which gives a dict the Struct reader made as it
    is: for values with no map Pulumi marks, the SDK's deserializer makes an equal copy
    (each resource's props copied once more, only to be wrapped in read-only proxies)."""
    deserialize = memoize_last_call(original)
    if not isinstance(_SIGNATURE_KEY, str) or original is not pulumi_policy.deserialize.deserialize_properties:
        return deserialize  # not the deserializer this knows: it deserializes everything

    @functools.wraps(deserialize)
    def deserialize_properties(*args: Any) -> Any:
        if len(args) == 1:
            first, second = _PLAIN.made
            if args[0] is first or args[0] is second:
                return args[0]
        return deserialize(*args)

    return deserialize_properties


def _message_to_dict(generic: Callable[..., Any]) -> Callable[..., Any]:
    """`json_format.MessageToDict`, with a `google.protobuf.Struct` (every resource's
    properties) read straight from its values: the generic converter looks up each value's
    field descriptor and dispatches on its type, a quarter of its time and of the pack's.
    The same dict: `tests/test_pack_analyze_equivalence.py` compares the two on generated
    structs, and the SDK's deserialization of both."""

    @functools.wraps(generic)
    def message_to_dict(message: Any) -> Any:
        if message.DESCRIPTOR.full_name != "google.protobuf.Struct":
            return generic(message)
        try:
            plain = _struct(message.fields)
        except _NotPlain:
            return generic(message)
        _PLAIN.made = (plain, _PLAIN.made[0])
        return plain

    return message_to_dict


#: The servicer's list of policies, as the SDK's own Analyze reads it (a private name).
_POLICIES = "_PolicyAnalyzerServicer__policies"
_CONFIG = "_PolicyAnalyzerServicer__policy_pack_config"


class _Asked:
    #: (the policies, the configuration, the groups to ask): one tuple, replaced whole.
    last: tuple[Any, Any, tuple[tuple[Any, list[tuple[int, str]]], ...]] = (None, None, ())


def _leaving_out_the_silent(analyze: Callable[..., Any], sdk: Any) -> Callable[..., Any]:
    """The SDK's `Analyze`, run without the policies that report nothing on the resource.

    The SDK calls every resource policy of the pack on every resource, and each call costs
    as much again as the policy's own work once the rules have run (a report function, the
    arguments, the conversions looked up again): seventeen of them cost more than the rules.
    Our policies carry `silent_policies(args)`, which names, without reporting, those that
    would report nothing here (no finding, no advisory: the rules run once, as for
    `validate`), asked once per request; the SDK's own loop then runs over the others, so
    what it reports, and in which order, is what it would have reported.  Policies without
    a configuration only (a configured one is asked the SDK's way); anything unexpected
    leaves the loop as the SDK has it.
    """
    resource_policy = sdk.ResourceValidationPolicy
    asked = _Asked()

    def askable(servicer: Any, policies: list[Any]) -> tuple[tuple[Any, list[tuple[int, str]]], ...]:
        """The policies to ask, grouped by the function that answers for them: worked out
        again only when the policies or the configuration (replaced whole by Configure) change."""
        config = servicer.__dict__.get(_CONFIG)
        known_policies, known_config, groups = asked.last
        if known_policies is policies and known_config is config and config is not None:
            return groups
        by_function: dict[int, tuple[Any, list[tuple[int, str]]]] = {}
        for policy in policies:
            silent_policies = getattr(policy, "silent_policies", None)
            if silent_policies is None or not isinstance(policy, resource_policy):
                continue
            if servicer._get_policy_config(policy.name) is not None:
                continue
            by_function.setdefault(id(silent_policies), (silent_policies, []))[1].append((id(policy), policy.name))
        groups = tuple(by_function.values())
        asked.last = (policies, config, groups)
        return groups

    def silent(servicer: Any, request: Any, policies: list[Any]) -> set[int]:
        groups = askable(servicer, policies)
        if not groups:
            return set()
        # What the SDK's loop gives each policy: the same (memoized) objects.
        plain = sdk.deserialize_properties(sdk.json_format.MessageToDict(request.properties))
        props = sdk.unknown_checking_proxy(plain)
        # Without the resource options and the provider, which no policy of ours reads:
        # the SDK's loop reads them from the request for the policies it calls, if any.
        args = sdk.ResourceValidationArgs(request.type, props, request.urn, request.name, None, None, None)
        quiet: set[int] = set()
        for silent_policies, members in groups:
            names = silent_policies(args)
            quiet.update(identity for identity, name in members if name in names)
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


class _ProxyOnDemand(Mapping[str, Any]):
    """The SDK's read-only proxy of some props, made when it is first read.

    The SDK wraps every resource's props (and its provider's) in proxies, a new object for
    each dict and list, for the policies to read; the pack's policies read the plain values
    behind them instead (`plain_props`), so this one is made only if something reads it
    (the stack policies, a resource with an unknown value), and then reads as it does."""

    __slots__ = ("_made", "_make", "_plain")

    def __init__(self, plain: Any, make: Callable[[Any], Any]) -> None:
        self._plain = plain
        self._make = make
        self._made: Any = None

    def _proxy(self) -> Any:
        if self._made is None:
            self._made = self._make(self._plain)
        return self._made

    def __getitem__(self, key: str) -> Any:
        return self._proxy()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._proxy())

    def __len__(self) -> int:
        return len(self._proxy())


def _on_demand(unknown_checking_proxy: Callable[[Any], Any]) -> Callable[[Any], Any]:
    @functools.wraps(unknown_checking_proxy)
    def proxy_on_demand(props: Any) -> Any:
        return _ProxyOnDemand(props, unknown_checking_proxy) if type(props) is dict else unknown_checking_proxy(props)

    return proxy_on_demand


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
