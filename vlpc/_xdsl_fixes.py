"""Work-arounds for xDSL behaviour that turns a user's typo into a hang (applied on import).

* xDSL 0.74's string-literal regex, ``"(?:[^"\\\\\\n\\v\\f]+|...)*"``, nests two
  unbounded repetitions: an unterminated string (``layout = "NT}`` followed by a long
  line) makes Python's regex engine backtrack exponentially, so ``vlpc`` hung instead
  of reporting "End of file reached before closing string literal".  The replacement
  matches exactly the same strings with one character per repetition (possessive), so
  a failed match costs time linear in the line length.
"""

from __future__ import annotations

import re

from xdsl.utils.mlir_lexer import MLIRLexer

_STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')


def apply() -> None:
    if getattr(MLIRLexer, "_unescaped_characters_regex", None) is not None:
        MLIRLexer._unescaped_characters_regex = _STRING_LITERAL


apply()
