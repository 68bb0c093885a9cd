"""Numbers and strings as Go's encoding/json writes them on kubectl's way to the API server.

kubernetes-sigs/yaml v1.4.0 (commit c3772b51db126345efe2dfe4ff8dac83b8141684) `yaml.go`
converts go-yaml's value with json.Marshal (NaN and infinities fail; invalid UTF-8
becomes U+FFFD byte by byte; a float is written with the shortest digits that read
back, as an integer when it is integral and below 1e21; float map keys are written by
`strconv.FormatFloat(v, 'g', -1, 32)`, ".inf"/".nan" for the infinities and NaN).
kubernetes/apimachinery v0.32.4 (commit 59e9003f02d6f0c8fff53719a7a0604ec82ee9a9)
`pkg/apis/meta/v1/unstructured/helpers.go` reads that JSON back with `pkg/util/json`
(sigs.k8s.io/json, ints preserved): an integral number that fits int64 is an integer,
anything else a float64 -- and that is what kubectl sends.  So 1.0 and 1e3 are sent as
the integers 1 and 1000, and 2**64-1 as 18446744073709552000.
"""

from __future__ import annotations

import math

from dra_guard.kubectl_yaml.errors import Refusal


def go_json_number(value: float) -> int | float:
    """A float64 as kubectl sends it (json.Marshal, then read back with ints preserved)."""
    if math.isnan(value) or math.isinf(value):
        raise Refusal(f"json: unsupported value: {value!r} (JSON has no NaN or infinity)")
    if value.is_integer() and abs(value) < 1e21:
        if abs(value) < 2**53:
            return int(value)
        from decimal import Decimal

        # Go writes the shortest digits that round-trip, then zeros: 1.8446744073709552e19
        # is sent as 18446744073709552000, not 18446744073709551616.
        return int(Decimal(repr(value)))
    return float(value)  # a plain float, whatever float subclass came in


def go_string(data: bytes) -> str:
    """Bytes as the Go string json.Marshal writes: each invalid UTF-8 byte becomes U+FFFD."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        out: list[str] = []
        position = 0
        while position < len(data):
            try:
                out.append(data[position:].decode("utf-8"))
                break
            except UnicodeDecodeError as error:
                out.append(data[position : position + error.start].decode("utf-8"))
                out.append("\ufffd")
                position += error.start + 1
        return "".join(out)


def _float32(value: float) -> float:
    import struct

    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _shortest_float32_digits(value: float) -> tuple[str, int]:
    """(digits, decimal point) of the shortest decimal that reads back as this float32."""
    from decimal import ROUND_HALF_EVEN, Context, Decimal

    exact = Decimal(value)
    for precision in range(1, 10):
        nearest = Context(prec=precision, rounding=ROUND_HALF_EVEN).plus(exact)
        unit = Decimal(1).scaleb(nearest.adjusted() - precision + 1)
        candidates = sorted((nearest, nearest - unit, nearest + unit), key=lambda candidate: abs(candidate - exact))
        for candidate in candidates:
            if candidate and _float32(float(candidate)) == value:
                _, digit_tuple, exponent = candidate.normalize().as_tuple()
                digits = "".join(map(str, digit_tuple))
                return digits, len(digits) + int(exponent)
    raise AssertionError("a float32 has at most 9 significant digits")  # pragma: no cover


def go_float32_key(value: float) -> str:
    """sigs.k8s.io/yaml's key for a float: strconv.FormatFloat(v, 'g', -1, 32), Inf/NaN spelt YAML-style."""
    single = _float32(value)
    if math.isnan(single):
        return ".nan"
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    sign = "-" if math.copysign(1.0, single) < 0 else ""
    if single == 0:
        return sign + "0"
    digits, point = _shortest_float32_digits(abs(single))
    exponent = point - 1
    if exponent < -4 or exponent >= 6:  # %e, as 'g' does with the shortest digits
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"
    whole = digits[:point].ljust(point, "0") if point > 0 else "0"
    fraction = ("0" * -point + digits) if point < 0 else digits[point:]
    return sign + whole + ("." + fraction if fraction else "")
