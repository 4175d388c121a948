"""A griffe extension for the API reference: the docstrings use Sphinx roles (``:func:`~a.b.c```,
``:class:`X```), which Markdown would print as written; each becomes inline code of its target
(the last part only when the target starts with ``~``, as Sphinx shows it). A paragraph that ends in
reStructuredText's literal-block marker ``::`` ends in one colon, as Sphinx renders it."""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):`(~?)([^`]+)`")
LITERAL_MARKER = re.compile(r"(?<=\S)::$", re.M)


def plain(text: str) -> str:
    text = ROLE.sub(lambda match: f"`{match.group(2).rsplit('.', 1)[-1] if match.group(1) else match.group(2)}`", text)
    return LITERAL_MARKER.sub(":", text)


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
