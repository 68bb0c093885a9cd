"""How findings and rules are shown: the report formats (`report/`, one module per
`--format`), the rule docs and the rules' index.  Never runs the engine.
"""
