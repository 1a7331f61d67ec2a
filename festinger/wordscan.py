"""The tokeniser's inner loops (words, shape, as_ascii, Lexicon): the C extension festinger._words when
`pip install` could build it (it needs a C compiler and the Python headers), else the same functions in
Python (festinger/_words_python.py), several times slower on a long prompt but finding the same words.
FATHOM_PURE_PYTHON=1 chooses Python even when the C one is built (tests, debugging)."""

from fathom.env import env_bool
from festinger import _words_python

if env_bool("FATHOM_PURE_PYTHON"):
    implementation = _words_python
else:
    try:
        from festinger import _words as implementation
    except ImportError:  # not built: installed without a compiler
        implementation = _words_python

COMPILED = implementation is not _words_python
Lexicon = implementation.Lexicon
as_ascii = implementation.as_ascii
shape = implementation.shape
words = implementation.words

__all__ = ["COMPILED", "Lexicon", "as_ascii", "implementation", "shape", "words"]
