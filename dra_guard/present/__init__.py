"""How findings and rules are shown: the report formats (text, JSON, SARIF), the rule docs and
the rules' index.  Never runs the engine.
"""
