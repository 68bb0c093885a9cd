"""One check spread over processes and machines: `check --jobs`, `check --shard`, `merge`.

A check reads and checks each file on its own (a *part*), keeping the findings that need
other objects pending with the small facts they rest on; one process then takes the parts
in input order and resolves them, as one process checking everything in order would
(`dra_guard.engine.run.Checker.take_part` and `add_part`).  `pool` spreads the parts over
worker processes, `shards` over CI jobs, `codec` carries a part between them.
"""
