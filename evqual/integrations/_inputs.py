"""What the framework components accept as a question, an answer and its evidence, checked as the CLI
checks a line (issue 39): ``None`` is never the text ``"None"``, a string context is one passage (never one
passage per character), a record (a dict) is rendered as the CLI renders it, and anything else is refused
with an :class:`~evqual.errors.EvqualDataError` whose :class:`~evqual.errors.DataIssue` has the E1xx code,
the component, the input's position and the field.
"""

from __future__ import annotations

from ..errors import DataIssue, EvqualDataError

__all__ = ["bad_input", "check_text", "check_passages"]


def bad_input(where: str, position: int, field: str, message: str, code: str = "E103") -> EvqualDataError:
    """The error of one bad input: ``[E103] <where>, line <position>, field '<field>': <message>``."""
    return EvqualDataError([DataIssue(code, where, position, field, message)])


def check_text(value, *, where: str, position: int, field: str, convert=None, optional: bool = False):
    """``value`` as a string: a ``str``, or what ``convert`` makes of a framework object (a message, a
    document), or None when ``optional``; any other value raises :func:`bad_input` (E102 for None)."""
    if isinstance(value, str):
        return value
    if convert is not None:
        text = convert(value)
        if isinstance(text, str):
            return text
    if value is None:
        if optional:
            return None
        raise bad_input(where, position, field, "is None; a string is needed", "E102")
    raise bad_input(where, position, field, f"must be a string; got {type(value).__name__}")


def check_passages(value, *, where: str, position: int, field: str, convert=None):
    """The evidence as the scorer takes it: a string is one passage; a list or tuple gives one passage per
    item (each checked by :func:`check_text`); a dict is a record, passed on for the scorer to render as
    ``evqual score`` does; None and any other type raise :func:`bad_input`."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) or (convert is not None and not isinstance(value, (list, tuple))
                                  and isinstance(convert(value), str)):
        return [check_text(value, where=where, position=position, field=field, convert=convert)]
    if value is None:
        raise bad_input(where, position, field, "is None; a passage or a list of passages is needed", "E102")
    if not isinstance(value, (list, tuple)):
        raise bad_input(where, position, field,
                        f"must be a string, a list of passages or a record (dict); got {type(value).__name__}")
    return [check_text(v, where=where, position=position, field=f"{field}[{i}]", convert=convert)
            for i, v in enumerate(value)]
