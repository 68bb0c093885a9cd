"""Read mutated real manifests and yaml-test-suite inputs with the fast reader and with the
PyYAML reader, for as long as asked, and report every one they read differently (objects,
lines or errors).

Usage: make fuzz [FUZZ_SECONDS=600] [FUZZ_SEED=N], or
       DRA_GUARD_YAML_PARSER=rapidyaml python tools/fuzz_readers.py --seconds 600 [--seed N]
       [--out divergences.jsonl]

The mutants are tests/reader_mutants.py's; `make test` reads a fixed sample of them
(tests/test_yaml_fuzz.py), this reads millions.  A divergence is a bug of the fast reader's
screens (dra_guard/kubectl_yaml/fast.py): check it with `kubectl patch --local -o json -f`,
then add it to tests/test_fast_reader.py.  Exit status 1 when any was found.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout, for `tests`

import pytest

from dra_guard.kubectl_yaml import fast
from tests.reader_mutants import mutant, seeds, suite_seeds
from tests.yaml_readers import both_readings

BATCH = 500


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="divergences.jsonl")
    parser.add_argument(
        "--seeds",
        choices=("manifests", "suite", "both"),
        default="both",
        help="mutate the manifests' documents, the yaml-test-suite's inputs, or both (default)",
    )
    arguments = parser.parse_args()
    if fast.active_parser() != "rapidyaml":
        print("the fast reader is off here (set DRA_GUARD_YAML_PARSER=rapidyaml)", file=sys.stderr)
        return 2
    rng = random.Random(arguments.seed)
    documents = (seeds() if arguments.seeds != "suite" else []) + (
        suite_seeds() if arguments.seeds != "manifests" else []
    )
    read = taken = differ = 0
    patch = pytest.MonkeyPatch()  # both_readings patches in a context of its own, undone per batch
    start = time.monotonic()
    with open(arguments.out, "w", encoding="utf-8") as out:
        while time.monotonic() - start < arguments.seconds:
            texts = [mutant(rng, rng.choice(documents)) for _ in range(BATCH)]
            taken += sum(fast.decode_plain(text) not in (fast.DECLINED, fast.EMPTY) for text in texts)
            mine, references = both_readings([text.encode() for text in texts], "m.yaml", patch)
            for text, fast_reading, reference in zip(texts, mine, references, strict=True):
                if fast_reading != reference:
                    differ += 1
                    out.write(json.dumps({"text": text, "fast": repr(fast_reading), "pyyaml": repr(reference)}) + "\n")
            read += len(texts)
    print(f"{read:,} mutants of {len(documents):,} seeds, {taken:,} taken by the fast reader, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
