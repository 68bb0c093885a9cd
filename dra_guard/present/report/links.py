"""Where each rule is documented, for the reports that point at it.

docs/rules.md has one section per rule, headed by its slug (`## dra0nn-rule-name`,
`dra_guard.present.rule_docs.rules_markdown`), so `docs/rules.md#<slug>` is the rule's
anchor there: a link relative to the repository root, which resolves in a checkout of
dra-guard and on its forge, and names the section everywhere else.

SARIF's `helpUri` must be an absolute URI (the schema's `"format": "uri"`, which the
upload to GitHub code scanning checks), so it needs the repository's address:
`REPOSITORY_URL`, which is pyproject.toml's `[project.urls] Repository` (a test keeps them
equal).
"""

from __future__ import annotations

from dra_guard.rules import RULES

RULES_DOC = "docs/rules.md"
#: pyproject.toml's `[project.urls] Repository` (None would leave `helpUri` out).
REPOSITORY_URL: str | None = "https://github.com/dra-guard/dra-guard"


def rule_slug(rule_id: str) -> str:
    """`dra0nn-rule-name`; the ID in lower case for a rule the registry does not hold."""
    rule = RULES.get(rule_id)
    return rule.slug if rule is not None else rule_id.lower()


def rule_title(rule_id: str) -> str:
    """`DRA0NN rule-name`: the ID and the name."""
    rule = RULES.get(rule_id)
    return f"{rule.id} {rule.name}" if rule is not None else rule_id


def rule_docs_link(rule_id: str) -> str:
    """`docs/rules.md#dra0nn-rule-name`, relative to the repository root."""
    return f"{RULES_DOC}#{rule_slug(rule_id)}"


def rule_docs_uri(rule_id: str, repository_url: str | None = REPOSITORY_URL) -> str | None:
    """The rule's section as an absolute URI, or None when the repository's address is unknown."""
    if repository_url is None:
        return None
    return f"{repository_url.rstrip('/')}/blob/main/{rule_docs_link(rule_id)}"
