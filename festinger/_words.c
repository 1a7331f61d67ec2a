/* festinger._words: the tokeniser's inner loops. festinger/text.py holds the rules as regexes; the
 * property tests in tests/festinger/test_text.py check that this code finds what they find.
 *
 * A word is a run of letters, digits and the joiners - . _ with the joiners stripped from its edges;
 * a run without a letter (a number) is no word. Letters and digits are Unicode's (str.isalnum()).
 *
 * words(text) returns a text's words in order. A Lexicon counts them: it holds a fixed set of words (a
 * world's common words, most of any prompt) with a count each, and counts a text's words without
 * making a Python string for any of its own; the other words come back as {word: occurrences}.
 * Creating and hashing a string per occurrence is what made tokenising and counting cost more than
 * everything else on the recollection path. shape(text) is what text.py looks for compound runs in.
 *
 * Texts are read as UTF-8 (an ASCII str's own bytes, else the UTF-8 copy CPython keeps in the str), so
 * a word is a span of bytes that hashes and compares alike in every text. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { LETTER = 1, DIGIT = 2, JOINER = 4 };

/* Each ASCII character's class: one lookup instead of three comparisons per character. */
static unsigned char classes[128];

static void classes_fill(void)
{
    for (int c = 0; c < 128; c++) {
        classes[c] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) ? LETTER
                     : (c >= '0' && c <= '9') ? DIGIT
                     : (c == '-' || c == '.' || c == '_') ? JOINER : 0;
    }
}

typedef struct {
    const unsigned char *bytes;  /* UTF-8 */
    Py_ssize_t size;
    PyObject *owner;             /* holds the bytes when the str could not (it has lone surrogates) */
} Text;

static int text_open(PyObject *str, Text *text)
{
    if (!PyUnicode_Check(str)) {
        PyErr_Format(PyExc_TypeError, "a text is a str, not %.100s", Py_TYPE(str)->tp_name);
        return -1;
    }
    text->owner = NULL;
    const char *utf8 = PyUnicode_AsUTF8AndSize(str, &text->size);
    if (utf8 == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            return -1;
        }
        PyErr_Clear();
        text->owner = PyUnicode_AsEncodedString(str, "utf-8", "surrogatepass");
        if (text->owner == NULL) {
            return -1;
        }
        utf8 = PyBytes_AS_STRING(text->owner);
        text->size = PyBytes_GET_SIZE(text->owner);
    }
    text->bytes = (const unsigned char *)utf8;
    return 0;
}

static void text_close(Text *text)
{
    Py_CLEAR(text->owner);
}

/* The class of the character at byte `at`; sets `width` to its length in bytes. */
static inline unsigned char class_at(const Text *text, Py_ssize_t at, Py_ssize_t *width)
{
    const unsigned char *b = text->bytes + at;
    if (b[0] < 0x80) {
        *width = 1;
        return classes[b[0]];
    }
    Py_UCS4 c;
    if (b[0] < 0xE0) {
        c = (Py_UCS4)(b[0] & 0x1F) << 6 | (b[1] & 0x3F);
        *width = 2;
    }
    else if (b[0] < 0xF0) {
        c = (Py_UCS4)(b[0] & 0x0F) << 12 | (Py_UCS4)(b[1] & 0x3F) << 6 | (b[2] & 0x3F);
        *width = 3;
    }
    else {
        c = (Py_UCS4)(b[0] & 0x07) << 18 | (Py_UCS4)(b[1] & 0x3F) << 12 | (Py_UCS4)(b[2] & 0x3F) << 6 | (b[3] & 0x3F);
        *width = 4;
    }
    return Py_UNICODE_ISALNUM(c) ? LETTER : 0;  /* a letter for the number rule too: not an ASCII digit */
}

typedef struct {
    Py_ssize_t start, length;  /* in bytes */
    Py_ssize_t offset;         /* in characters, for the caller's str */
    int ascii;
} Span;

typedef struct {
    Py_ssize_t at, offset;  /* the next byte, and its character's index */
} Cursor;

/* The next word after the cursor: fills span and moves the cursor past it; 0 when there is none. */
static int next_word(const Text *text, Cursor *cursor, Span *span)
{
    Py_ssize_t i = cursor->at, offset = cursor->offset, width;
    while (i < text->size) {
        while (i < text->size && !class_at(text, i, &width)) {
            i += width;
            offset++;
        }
        Py_ssize_t start = i, start_offset = offset;
        unsigned char seen = 0, cls;
        int ascii = 1;
        while (i < text->size && (cls = class_at(text, i, &width))) {
            seen |= cls;
            ascii &= width == 1;
            i += width;
            offset++;
        }
        if (seen & LETTER) {  /* so the joiner runs stripped below end at a letter */
            Py_ssize_t end = i;
            while (text->bytes[start] < 0x80 && classes[text->bytes[start]] == JOINER) {
                start++;
                start_offset++;
            }
            while (text->bytes[end - 1] < 0x80 && classes[text->bytes[end - 1]] == JOINER) {
                end--;
            }
            *span = (Span){start, end - start, start_offset, ascii};
            cursor->at = i;
            cursor->offset = offset;
            return 1;
        }
    }
    cursor->at = i;
    cursor->offset = offset;
    return 0;
}

static PyObject *word_at(const Text *text, const Span *span)
{
    if (!span->ascii) {
        return PyUnicode_DecodeUTF8((const char *)text->bytes + span->start, span->length, "surrogatepass");
    }
    PyObject *word = PyUnicode_New(span->length, 127);
    if (word != NULL) {
        memcpy(PyUnicode_1BYTE_DATA(word), text->bytes + span->start, span->length);
    }
    return word;
}

static PyObject *words(PyObject *module, PyObject *str)
{
    Text text;
    if (text_open(str, &text) < 0) {
        return NULL;
    }
    PyObject *found = PyList_New(0);
    Cursor cursor = {0, 0};
    Span span;
    while (found != NULL && next_word(&text, &cursor, &span)) {
        PyObject *word = word_at(&text, &span);
        if (word == NULL || PyList_Append(found, word) < 0) {
            Py_CLEAR(found);
        }
        Py_XDECREF(word);
    }
    text_close(&text);
    if (found == NULL) {
        return NULL;
    }
    PyObject *tokens = PyList_AsTuple(found);
    Py_DECREF(found);
    return tokens;
}

/* One character per character of text: `A` a capital (A-Z, À-Ö, Ø-Þ: text.py's compound rule), `a`
 * another letter, digit or joiner, ` ` a space or tab, `.` anything else. */
static Py_UCS1 shapes[256];  /* for the first 256 characters, the only ones most texts hold */

static Py_UCS1 shape_of(Py_UCS4 c)
{
    return ((c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7)) ? 'A'
           : (c < 128 ? classes[c] != 0 : Py_UNICODE_ISALNUM(c)) ? 'a'
           : (c == ' ' || c == '\t') ? ' ' : '.';
}

static PyObject *shape(PyObject *module, PyObject *str)
{
    if (!PyUnicode_Check(str)) {
        PyErr_Format(PyExc_TypeError, "a text is a str, not %.100s", Py_TYPE(str)->tp_name);
        return NULL;
    }
    Py_ssize_t length = PyUnicode_GET_LENGTH(str);
    int kind = PyUnicode_KIND(str);
    const void *data = PyUnicode_DATA(str);
    PyObject *shaped = PyUnicode_New(length, 127);
    if (shaped == NULL) {
        return NULL;
    }
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(shaped);
    if (kind == PyUnicode_1BYTE_KIND) {
        for (Py_ssize_t i = 0; i < length; i++) {
            out[i] = shapes[((const Py_UCS1 *)data)[i]];
        }
    }
    else {
        for (Py_ssize_t i = 0; i < length; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            out[i] = c < 256 ? shapes[c] : shape_of(c);
        }
    }
    return shaped;
}

/* Text whose characters beyond ASCII are all punctuation (dashes, curly quotes, symbols) with a comma
 * for each of them: the same words, runs and cues (every rule treats any character that is no letter,
 * digit, joiner, space or tab alike), and ASCII, which lowercases and scans several times faster.
 * None when a letter or digit lies beyond ASCII. */
static PyObject *as_ascii(PyObject *module, PyObject *str)
{
    if (!PyUnicode_Check(str)) {
        PyErr_Format(PyExc_TypeError, "a text is a str, not %.100s", Py_TYPE(str)->tp_name);
        return NULL;
    }
    if (PyUnicode_IS_ASCII(str)) {
        return Py_NewRef(str);
    }
    Py_ssize_t length = PyUnicode_GET_LENGTH(str);
    int kind = PyUnicode_KIND(str);
    const void *data = PyUnicode_DATA(str);
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= 128 && Py_UNICODE_ISALNUM(c)) {
            Py_RETURN_NONE;
        }
    }
    PyObject *ascii = PyUnicode_New(length, 127);
    if (ascii == NULL) {
        return NULL;
    }
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(ascii);
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        out[i] = c < 128 ? (Py_UCS1)c : ',';
    }
    return ascii;
}

/* A word's hash: eight bytes at a time through murmur3's finaliser. Seeded from Python's own hash of
 * a string, which differs in every process, so no text can be made to collide in these tables. */
static uint64_t seed;

static inline uint64_t mix(uint64_t hash)
{
    hash ^= hash >> 33;
    hash *= 0xFF51AFD7ED558CCDULL;
    return hash ^ (hash >> 33);
}

static uint64_t word_hash(const unsigned char *bytes, Py_ssize_t length)
{
    uint64_t hash = seed ^ (uint64_t)length * 0x9E3779B97F4A7C15ULL, chunk;
    Py_ssize_t i = 0;
    for (; i + 8 <= length; i += 8) {
        memcpy(&chunk, bytes + i, 8);
        hash = mix(hash ^ chunk);
    }
    chunk = 0;
    memcpy(&chunk, bytes + i, length - i);
    return mix(hash ^ chunk);
}

/* --- the other words of one text: an open-addressing table kept at most half full ------------------- */

typedef struct {
    uint64_t hash;
    Span span;
    Py_ssize_t count;  /* 0: an empty slot */
} Slot;

typedef struct {
    Slot *slots;
    size_t capacity;  /* a power of two */
    size_t *order;    /* the slots in use, first seen first */
    size_t distinct;
} Table;

static int table_resize(Table *table, size_t capacity)
{
    Slot *slots = PyMem_Calloc(capacity, sizeof(Slot));
    size_t *order = PyMem_Malloc(sizeof(size_t) * (capacity / 2));
    if (slots == NULL || order == NULL) {
        PyMem_Free(slots);
        PyMem_Free(order);
        PyErr_NoMemory();
        return -1;
    }
    for (size_t n = 0; n < table->distinct; n++) {
        const Slot *slot = &table->slots[table->order[n]];
        size_t i = slot->hash & (capacity - 1);
        while (slots[i].count) {
            i = (i + 1) & (capacity - 1);
        }
        slots[i] = *slot;
        order[n] = i;
    }
    PyMem_Free(table->slots);
    PyMem_Free(table->order);
    table->slots = slots;
    table->order = order;
    table->capacity = capacity;
    return 0;
}

static int table_count(Table *table, const unsigned char *chars, const Span *span, uint64_t hash)
{
    if (2 * (table->distinct + 1) > table->capacity && table_resize(table, table->capacity * 2) < 0) {
        return -1;
    }
    const unsigned char *bytes = chars + span->start;
    size_t i = hash & (table->capacity - 1);
    Slot *slot;
    for (slot = &table->slots[i]; slot->count; slot = &table->slots[i]) {
        if (slot->hash == hash && slot->span.length == span->length
                && memcmp(chars + slot->span.start, bytes, span->length) == 0) {
            break;
        }
        i = (i + 1) & (table->capacity - 1);
    }
    if (slot->count++ == 0) {
        slot->hash = hash;
        slot->span = *span;
        table->order[table->distinct++] = i;
    }
    return 0;
}

/* {word: count} for the table's words, first seen first; frees the table. */
static PyObject *table_take(Table *table, const Text *text)
{
    PyObject *counts = PyDict_New();
    for (size_t n = 0; counts != NULL && n < table->distinct; n++) {
        const Slot *slot = &table->slots[table->order[n]];
        PyObject *word = word_at(text, &slot->span);
        PyObject *count = PyLong_FromSsize_t(slot->count);
        if (word == NULL || count == NULL || PyDict_SetItem(counts, word, count) < 0) {
            Py_CLEAR(counts);
        }
        Py_XDECREF(word);
        Py_XDECREF(count);
    }
    PyMem_Free(table->slots);
    PyMem_Free(table->order);
    return counts;
}

/* --- Lexicon ----------------------------------------------------------------------------------------- */

/* Laid out for the read path's cache misses: a lookup reads one entry, which holds a word of up to eight
 * bytes whole (most words); a longer word is compared in the arena, where the words lie back to back. */
typedef struct {
    uint64_t head;    /* the word's first eight bytes, zero-padded */
    uint64_t hash;
    uint32_t length;  /* 0: an empty entry */
    uint32_t index;
} Entry;

typedef struct {
    PyObject_HEAD
    PyObject *words;      /* tuple of str, the index order */
    char *arena;
    Py_ssize_t *offsets;  /* each word's place in the arena */
    Py_ssize_t *counts;
    Entry *entries;       /* open addressing, at most half full */
    size_t capacity;
} Lexicon;

static uint64_t head_of(const unsigned char *bytes, Py_ssize_t length)
{
    uint64_t head = 0;
    memcpy(&head, bytes, length < 8 ? length : 8);
    return head;
}

static Py_ssize_t lexicon_find(const Lexicon *self, const unsigned char *bytes, Py_ssize_t length, uint64_t hash)
{
    uint64_t head = head_of(bytes, length);
    for (size_t i = hash & (self->capacity - 1); self->entries[i].length; i = (i + 1) & (self->capacity - 1)) {
        const Entry *entry = &self->entries[i];
        if (entry->head == head && entry->length == length && entry->hash == hash
                && (length <= 8 || memcmp(self->arena + self->offsets[entry->index], bytes, length) == 0)) {
            return entry->index;
        }
    }
    return -1;
}

static int lexicon_ready(const Lexicon *self)
{
    if (self->words == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the Lexicon was never given its words");
        return 0;
    }
    return 1;
}

static void lexicon_free(Lexicon *self)
{
    Py_CLEAR(self->words);
    PyMem_Free(self->arena);
    PyMem_Free(self->offsets);
    PyMem_Free(self->counts);
    PyMem_Free(self->entries);
    self->arena = NULL;
    self->offsets = self->counts = NULL;
    self->entries = NULL;
    self->capacity = 0;
}

static void lexicon_dealloc(Lexicon *self)
{
    lexicon_free(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Builds the tables in a local Lexicon and moves them into self at the end: the Python code that may
 * run meanwhile (the iterable, a garbage collection) never sees a half-built self. The words are kept as
 * exact str, whose hashing runs no Python code. */
static int lexicon_init(Lexicon *self, PyObject *args, PyObject *kwargs)
{
    PyObject *iterable;
    if (!PyArg_ParseTuple(args, "O:Lexicon", &iterable)) {
        return -1;
    }
    PyObject *given = PySequence_Tuple(iterable);
    if (given == NULL) {
        return -1;
    }
    Py_ssize_t size = PyTuple_GET_SIZE(given), arena_size = 0, length;
    for (Py_ssize_t n = 0; n < size; n++) {
        PyObject *word = PyTuple_GET_ITEM(given, n);
        if (!PyUnicode_Check(word)) {
            PyErr_Format(PyExc_TypeError, "a Lexicon holds str, not %.100s", Py_TYPE(word)->tp_name);
        }
        else if (PyUnicode_AsUTF8AndSize(word, &length) != NULL && length > UINT32_MAX - arena_size) {
            PyErr_SetString(PyExc_ValueError, "too many words for a Lexicon");
        }
        else {
            arena_size += length;
        }
        if (PyErr_Occurred()) {
            Py_DECREF(given);
            return -1;
        }
    }
    if (size >= UINT32_MAX / 4) {
        Py_DECREF(given);
        PyErr_SetString(PyExc_ValueError, "too many words for a Lexicon");
        return -1;
    }
    Lexicon built = {.capacity = 16};
    while (built.capacity < 2 * (size_t)size) {
        built.capacity *= 2;
    }
    built.arena = PyMem_Malloc(arena_size + 1);
    built.offsets = PyMem_Calloc(size + 1, sizeof(Py_ssize_t));
    built.counts = PyMem_Calloc(size + 1, sizeof(Py_ssize_t));
    built.entries = PyMem_Calloc(built.capacity, sizeof(Entry));
    PyObject *words = PyList_New(0);
    int failed = 0;
    if (built.arena == NULL || built.offsets == NULL || built.counts == NULL || built.entries == NULL) {
        PyErr_NoMemory();
        failed = 1;
    }
    Py_ssize_t used = 0;
    for (Py_ssize_t n = 0; !failed && words != NULL && n < size; n++) {
        const unsigned char *bytes = (const unsigned char *)PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(given, n),
                                                                                    &length);
        uint64_t hash = word_hash(bytes, length);
        if (length == 0 || lexicon_find(&built, bytes, length, hash) >= 0) {
            continue;  /* no word, or said twice */
        }
        Py_ssize_t index = PyList_GET_SIZE(words);
        PyObject *exact = PyUnicode_FromObject(PyTuple_GET_ITEM(given, n));
        failed = exact == NULL || PyList_Append(words, exact) < 0;
        Py_XDECREF(exact);
        if (failed) {
            break;
        }
        memcpy(built.arena + used, bytes, length);
        built.offsets[index] = used;
        used += length;
        size_t i = hash & (built.capacity - 1);
        while (built.entries[i].length) {
            i = (i + 1) & (built.capacity - 1);
        }
        built.entries[i] = (Entry){head_of(bytes, length), hash, (uint32_t)length, (uint32_t)index};
    }
    Py_DECREF(given);
    if (!failed && words != NULL) {
        built.words = PyList_AsTuple(words);
    }
    Py_XDECREF(words);
    if (built.words == NULL) {
        lexicon_free(&built);
        return -1;
    }
    lexicon_free(self);
    self->words = built.words;
    self->arena = built.arena;
    self->offsets = built.offsets;
    self->counts = built.counts;
    self->entries = built.entries;
    self->capacity = built.capacity;
    return 0;
}

static PyObject *lexicon_count(Lexicon *self, PyObject *str)
{
    Text text;
    if (!lexicon_ready(self) || text_open(str, &text) < 0) {
        return NULL;
    }
    Table others = {NULL, 0, NULL, 0};
    int failed = table_resize(&others, 256) < 0;
    Cursor cursor = {0, 0};
    Span span;
    while (!failed && next_word(&text, &cursor, &span)) {
        const unsigned char *bytes = text.bytes + span.start;
        uint64_t hash = word_hash(bytes, span.length);
        Py_ssize_t index = lexicon_find(self, bytes, span.length, hash);
        if (index >= 0) {
            self->counts[index]++;
        }
        else {
            failed = table_count(&others, text.bytes, &span, hash) < 0;
        }
    }
    PyObject *counts = failed ? NULL : table_take(&others, &text);
    if (failed) {
        PyMem_Free(others.slots);
        PyMem_Free(others.order);
    }
    text_close(&text);
    return counts;
}

static PyObject *lexicon_starts(Lexicon *self, PyObject *str)
{
    Text text;
    if (!lexicon_ready(self) || text_open(str, &text) < 0) {
        return NULL;
    }
    PyObject *starts = PyList_New(0);
    Cursor cursor = {0, 0};
    Span span;
    while (starts != NULL && next_word(&text, &cursor, &span)) {
        const unsigned char *bytes = text.bytes + span.start;
        if (lexicon_find(self, bytes, span.length, word_hash(bytes, span.length)) < 0) {
            continue;
        }
        PyObject *start = PyLong_FromSsize_t(span.offset);
        if (start == NULL || PyList_Append(starts, start) < 0) {
            Py_CLEAR(starts);
        }
        Py_XDECREF(start);
    }
    text_close(&text);
    return starts;
}

static PyObject *lexicon_take(Lexicon *self, PyObject *unused)
{
    PyObject *counts = PyDict_New();
    Py_ssize_t size = self->words == NULL ? 0 : PyTuple_GET_SIZE(self->words);
    for (Py_ssize_t index = 0; counts != NULL && index < size; index++) {
        if (self->counts[index] == 0) {
            continue;
        }
        PyObject *count = PyLong_FromSsize_t(self->counts[index]);
        if (count == NULL || PyDict_SetItem(counts, PyTuple_GET_ITEM(self->words, index), count) < 0) {
            Py_CLEAR(counts);
        }
        Py_XDECREF(count);
    }
    if (counts != NULL && size) {
        memset(self->counts, 0, size * sizeof(Py_ssize_t));
    }
    return counts;
}

static Py_ssize_t lexicon_len(Lexicon *self)
{
    return self->words == NULL ? 0 : PyTuple_GET_SIZE(self->words);
}

static PyMethodDef lexicon_methods[] = {
    {"count", (PyCFunction)lexicon_count, METH_O,
     "count(text, /)\n--\n\nCount the lexicon's words in text (as words() finds them); returns "
     "{word: occurrences} for the other words, first seen first."},
    {"starts", (PyCFunction)lexicon_starts, METH_O,
     "starts(text, /)\n--\n\nWhere the lexicon's words stand in text (as words() finds them): their "
     "offsets, in order. Counts nothing."},
    {"take", (PyCFunction)lexicon_take, METH_NOARGS,
     "take()\n--\n\n{word: count} for the lexicon's words counted since the last take; their counts "
     "start again at 0."},
    {NULL, NULL, 0, NULL},
};

static PyObject *lexicon_words(Lexicon *self, void *closure)
{
    return self->words == NULL ? PyTuple_New(0) : Py_NewRef(self->words);
}

static PyGetSetDef lexicon_getset[] = {
    {"words", (getter)lexicon_words, NULL, "The words, in the order given (once each).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods lexicon_as_sequence = {.sq_length = (lenfunc)lexicon_len};

static PyTypeObject LexiconType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "festinger._words.Lexicon",
    .tp_doc = "Lexicon(words)\n--\n\nA fixed set of words, each with a count.",
    .tp_basicsize = sizeof(Lexicon),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)lexicon_init,
    .tp_dealloc = (destructor)lexicon_dealloc,
    .tp_methods = lexicon_methods,
    .tp_getset = lexicon_getset,
    .tp_as_sequence = &lexicon_as_sequence,
};

static PyMethodDef methods[] = {
    {"words", words, METH_O,
     "words(text, /)\n--\n\nThe words of text, in order: runs of letters, digits and - . _ with the "
     "joiners stripped from their edges, those without a letter dropped."},
    {"as_ascii", as_ascii, METH_O,
     "as_ascii(text, /)\n--\n\ntext with a comma for each character beyond ASCII when none of them is a "
     "letter or digit; else None."},
    {"shape", shape, METH_O,
     "shape(text, /)\n--\n\nA character per character of text: A a capital (A-Z and Latin-1's), a another "
     "letter, digit or joiner, a space for a space or tab, . anything else."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "festinger._words", NULL, -1, methods,
};

PyMODINIT_FUNC PyInit__words(void)
{
    classes_fill();
    for (Py_UCS4 c = 0; c < 256; c++) {
        shapes[c] = shape_of(c);
    }
    PyObject *salt = PyUnicode_FromString("festinger._words");
    Py_hash_t salt_hash = salt == NULL ? -1 : PyObject_Hash(salt);
    Py_XDECREF(salt);
    if (salt_hash == -1 || PyType_Ready(&LexiconType) < 0) {
        return NULL;
    }
    seed = (uint64_t)salt_hash;
    PyObject *created = PyModule_Create(&module);
    if (created != NULL && PyModule_AddObjectRef(created, "Lexicon", (PyObject *)&LexiconType) < 0) {
        Py_CLEAR(created);
    }
    return created;
}
