"""The LLM backend's prompt templates: seed 000's appendix A, shipped as editable text files.

The files live in ``evqual/verify/prompts/`` (package data).  They are
:class:`string.Template` texts: placeholders are ``${name}``, so the JSON
braces of a prompt need no escaping; write ``$$`` for a literal dollar sign.
To change a prompt, copy the folder, edit the copy and pass its path as
``prompts_dir=`` to the LLM judge, mutator or extractor (or to
:func:`load_prompt`); a file missing from the copy falls back to the shipped one.

=================  =========================================  ===============================
name               what                                       placeholders
=================  =========================================  ===============================
factoids           A.1 factoid decomposition (JSON array)     ``text``
synonym            A.2 synonym mutations, one per line        ``count``, ``question``, ``factoid``
antonym            A.2 antonym mutations, one per line        ``count``, ``question``, ``factoid``
verify_factoid     A.3 factoid verification (YES/NO/NOT SURE) ``context``, ``statement``
verify_claim       seed 003 claim verification (JSON label)   ``question``, ``claim``, ``passages``
=================  =========================================  ===============================
"""

from __future__ import annotations

import string
from importlib import resources
from pathlib import Path

__all__ = ["PROMPTS", "load_prompt"]

#: Each prompt's name and the placeholders it must contain.
PROMPTS = {
    "factoids": ("text",),
    "synonym": ("count", "question", "factoid"),
    "antonym": ("count", "question", "factoid"),
    "verify_factoid": ("context", "statement"),
    "verify_claim": ("question", "claim", "passages"),
}


def load_prompt(name: str, directory=None) -> string.Template:
    """The prompt template ``name`` (a key of :data:`PROMPTS`).

    Parameters
    ----------
    name : str
    directory : str or path-like, optional
        A folder holding edited copies (``<name>.txt``); when it has no such
        file, the shipped prompt is used.

    Raises
    ------
    ValueError
        For an unknown name, or a template that is invalid or lacks one of its
        placeholders (the message names the file).

    Examples
    --------
    >>> t = load_prompt("verify_factoid")
    >>> "Statement: Paris is in France." in t.substitute(context="...", statement="Paris is in France.")
    True
    """
    if name not in PROMPTS:
        raise ValueError(f"load_prompt: unknown prompt {name!r}; choose one of {sorted(PROMPTS)}")
    filename = f"{name}.txt"
    where = None
    if directory is not None:
        candidate = Path(directory) / filename
        if candidate.is_file():
            text, where = candidate.read_text(encoding="utf-8"), str(candidate)
    if where is None:
        resource = resources.files("evqual.verify").joinpath("prompts", filename)
        text, where = resource.read_text(encoding="utf-8"), f"evqual/verify/prompts/{filename}"
    template = string.Template(text)
    if not template.is_valid():
        raise ValueError(f"prompt file {where}: invalid placeholder (use ${{name}}; write $$ for a literal $)")
    missing = [p for p in PROMPTS[name] if p not in template.get_identifiers()]
    if missing:
        raise ValueError(f"prompt file {where}: lacks placeholder(s) "
                         f"{', '.join('${' + p + '}' for p in missing)} (needs {', '.join(PROMPTS[name])})")
    unknown = [p for p in template.get_identifiers() if p not in PROMPTS[name]]
    if unknown:
        raise ValueError(f"prompt file {where}: unknown placeholder(s) {', '.join('${' + p + '}' for p in unknown)}"
                         f" (allowed: {', '.join(PROMPTS[name])}; write $$ for a literal $)")
    return template
