/* Repeated object keys in JSON text, found by one scan of the bytes (engine/duplicates.py).
 *
 * Why C: refusing repeated keys is mapc's default for every input, so the check runs on every
 * document; in Python it cost 1.6-1.9x the parse of the 30 MB benchmark rows, and issue 14 asks for
 * at most 20 %.  The scan reads each byte once: strings are skipped with memchr, only keys are
 * decoded (when they hold an escape, so that "a" and "\u0061" are one key), and each open object
 * keeps its keys in a stack shared by all levels (an object's keys are dropped when it closes) with
 * a hash index once it holds more than a few.  Time and memory are linear in the input.
 *
 * scan(data: bytes) -> list[tuple[str, str]] | None
 *   every key that repeats an earlier key of its object, in text order, as (JSON Pointer of the
 *   repeated key, the key); None when the bytes are not JSON the scanner can follow (the caller
 *   then asks the pure-Python check, which has the same verdicts).  The text is expected to have
 *   been parsed already; the scanner validates only what it needs to stay in bounds.
 *
 * Keys are compared as code point sequences, as Python compares the str the json module makes:
 * escapes are decoded to UTF-8, a surrogate pair to its code point, a lone surrogate to its
 * three-byte (WTF-8) form, which the pointer's str then carries through "surrogatepass".
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define LINEAR_KEYS 8 /* an object with at most this many keys is searched without a hash index */

typedef struct {
    Py_ssize_t off; /* into the input, or into the arena when `decoded` */
    Py_ssize_t len;
    uint64_t hash;
    int decoded;
} Key;

typedef struct {
    char kind;            /* '{' or '[' */
    Py_ssize_t index;     /* an array's current element */
    Py_ssize_t first;     /* an object's first key in the key stack */
    Py_ssize_t current;   /* an object's current key (the one whose value is being read), or -1 */
    Py_ssize_t arena_mark;
    Py_ssize_t *table;    /* hash index of this object's keys (slot = key number + 1), when built */
    Py_ssize_t capacity;
    int indexed;          /* the table holds this object's keys */
    int expect_key;
} Level;

typedef struct {
    const char *data;
    Py_ssize_t size;
    Key *keys;
    Py_ssize_t nkeys, keys_cap;
    char *arena;
    Py_ssize_t arena_len, arena_cap;
    Level *levels;
    Py_ssize_t depth, levels_cap;
    char *path;
    Py_ssize_t path_len, path_cap;
    PyObject *out;
} Scan;

static uint64_t hash_bytes(const char *p, Py_ssize_t n) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

static int grow(void **buf, Py_ssize_t *cap, Py_ssize_t need, size_t item) {
    if (need <= *cap) return 0;
    Py_ssize_t n = *cap ? *cap : 16;
    while (n < need) n *= 2;
    void *p = PyMem_Realloc(*buf, (size_t)n * item);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *buf = p;
    *cap = n;
    return 0;
}

static const char *key_bytes(Scan *s, const Key *k) { return k->decoded ? s->arena + k->off : s->data + k->off; }

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static void put_utf8(char *dst, Py_ssize_t *n, unsigned cp) {
    if (cp < 0x80) {
        dst[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        dst[(*n)++] = (char)(0xC0 | (cp >> 6));
        dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) { /* lone surrogates too (WTF-8) */
        dst[(*n)++] = (char)(0xE0 | (cp >> 12));
        dst[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        dst[(*n)++] = (char)(0xF0 | (cp >> 18));
        dst[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        dst[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
}

/* The end of the string whose opening quote is at `i` (the index after its closing quote), or -1. */
static Py_ssize_t string_end(const char *d, Py_ssize_t size, Py_ssize_t i) {
    Py_ssize_t start = i + 1, at = start;
    for (;;) {
        const char *q = memchr(d + at, '"', (size_t)(size - at));
        if (q == NULL) return -1;
        Py_ssize_t j = q - d, b = j;
        while (b > start && d[b - 1] == '\\') b--;
        if (((j - b) & 1) == 0) return j + 1; /* an even run of backslashes: the quote is not escaped */
        at = j + 1;
    }
}

/* Decode the key d[start:end) (between its quotes, holding a backslash) into the arena. */
static int decode_key(Scan *s, Py_ssize_t start, Py_ssize_t end, Key *k) {
    const char *d = s->data;
    /* decoded text is never longer than the escaped text */
    if (grow((void **)&s->arena, &s->arena_cap, s->arena_len + (end - start), 1) < 0) return -1;
    char *dst = s->arena + s->arena_len;
    Py_ssize_t n = 0, i = start;
    while (i < end) {
        char c = d[i];
        if (c != '\\') {
            dst[n++] = c;
            i++;
            continue;
        }
        if (i + 1 >= end) return 1;
        char e = d[i + 1];
        i += 2;
        switch (e) {
        case '"': dst[n++] = '"'; break;
        case '\\': dst[n++] = '\\'; break;
        case '/': dst[n++] = '/'; break;
        case 'b': dst[n++] = '\b'; break;
        case 'f': dst[n++] = '\f'; break;
        case 'n': dst[n++] = '\n'; break;
        case 'r': dst[n++] = '\r'; break;
        case 't': dst[n++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (i + 4 > end || hex4(d + i, &cp) < 0) return 1;
            i += 4;
            /* a high surrogate followed by an escaped low one is one code point (as json.loads reads it) */
            if (cp >= 0xD800 && cp < 0xDC00 && i + 6 <= end && d[i] == '\\' && d[i + 1] == 'u' &&
                hex4(d + i + 2, &lo) == 0 && lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            }
            put_utf8(dst, &n, cp);
            break;
        }
        default: return 1;
        }
    }
    k->off = s->arena_len;
    k->len = n;
    k->decoded = 1;
    s->arena_len += n;
    return 0;
}

static int same_key(Scan *s, const Key *a, const Key *b) {
    return a->hash == b->hash && a->len == b->len && memcmp(key_bytes(s, a), key_bytes(s, b), (size_t)a->len) == 0;
}

static int index_insert(Scan *s, Level *lv, Py_ssize_t key_no) {
    Py_ssize_t mask = lv->capacity - 1, slot = (Py_ssize_t)(s->keys[key_no].hash & (uint64_t)mask);
    while (lv->table[slot]) slot = (slot + 1) & mask;
    lv->table[slot] = key_no + 1;
    return 0;
}

static int index_build(Scan *s, Level *lv, Py_ssize_t count) {
    Py_ssize_t cap = 64;
    while (cap < count * 2) cap *= 2;
    if (lv->capacity != cap) {
        PyMem_Free(lv->table);
        lv->table = PyMem_Malloc((size_t)cap * sizeof(Py_ssize_t));
        if (lv->table == NULL) {
            lv->capacity = 0;
            PyErr_NoMemory();
            return -1;
        }
        lv->capacity = cap;
    }
    memset(lv->table, 0, (size_t)cap * sizeof(Py_ssize_t));
    for (Py_ssize_t k = lv->first; k < lv->first + count; k++) index_insert(s, lv, k);
    lv->indexed = 1;
    return 0;
}

/* Whether the key just pushed (the last of the stack) repeats one of its object's. */
static int repeats(Scan *s, Level *lv, int *found) {
    Py_ssize_t last = s->nkeys - 1, count = last - lv->first;
    Key *k = &s->keys[last];
    *found = 0;
    if (count < LINEAR_KEYS) {
        for (Py_ssize_t j = lv->first; j < last; j++)
            if (same_key(s, &s->keys[j], k)) {
                *found = 1;
                return 0;
            }
        return 0;
    }
    if (!lv->indexed || count * 2 > lv->capacity) {
        if (index_build(s, lv, count) < 0) return -1;
    }
    Py_ssize_t mask = lv->capacity - 1, slot = (Py_ssize_t)(k->hash & (uint64_t)mask);
    while (lv->table[slot]) {
        if (same_key(s, &s->keys[lv->table[slot] - 1], k)) {
            *found = 1;
            return 0;
        }
        slot = (slot + 1) & mask;
    }
    lv->table[slot] = last + 1;
    return 0;
}

static int path_add(Scan *s, const char *p, Py_ssize_t n) {
    /* "~" and "/" become two bytes each */
    if (grow((void **)&s->path, &s->path_cap, s->path_len + 2 * n + 1, 1) < 0) return -1;
    s->path[s->path_len++] = '/';
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p[i] == '~') {
            s->path[s->path_len++] = '~';
            s->path[s->path_len++] = '0';
        } else if (p[i] == '/') {
            s->path[s->path_len++] = '~';
            s->path[s->path_len++] = '1';
        } else {
            s->path[s->path_len++] = p[i];
        }
    }
    return 0;
}

/* Append (pointer, key) of the key just pushed, a repeat, to the result list. */
static int report(Scan *s) {
    char number[32];
    s->path_len = 0;
    for (Py_ssize_t d = 0; d < s->depth; d++) {
        Level *lv = &s->levels[d];
        int rc;
        if (lv->kind == '[') {
            int n = snprintf(number, sizeof number, "%zd", lv->index);
            rc = path_add(s, number, n);
        } else {
            const Key *k = &s->keys[d + 1 == s->depth ? s->nkeys - 1 : lv->current];
            rc = path_add(s, key_bytes(s, k), k->len);
        }
        if (rc < 0) return -1;
    }
    const Key *k = &s->keys[s->nkeys - 1];
    PyObject *where = PyUnicode_DecodeUTF8(s->path, s->path_len, "surrogatepass");
    PyObject *key = where ? PyUnicode_DecodeUTF8(key_bytes(s, k), k->len, "surrogatepass") : NULL;
    PyObject *pair = key ? PyTuple_Pack(2, where, key) : NULL;
    int rc = pair ? PyList_Append(s->out, pair) : -1;
    Py_XDECREF(where);
    Py_XDECREF(key);
    Py_XDECREF(pair);
    return rc;
}

static int push(Scan *s, char kind) {
    if (s->depth == s->levels_cap) {
        Py_ssize_t old = s->levels_cap;
        if (grow((void **)&s->levels, &s->levels_cap, s->depth + 1, sizeof(Level)) < 0) return -1;
        memset(s->levels + old, 0, (size_t)(s->levels_cap - old) * sizeof(Level));
    }
    Level *lv = &s->levels[s->depth++];
    lv->kind = kind;
    lv->index = 0;
    lv->first = s->nkeys;
    lv->current = -1;
    lv->arena_mark = s->arena_len;
    lv->indexed = 0;
    lv->expect_key = kind == '{';
    return 0;
}

/* 0: scanned; 1: not JSON the scanner can follow; -1: a Python error is set. */
static int run(Scan *s) {
    const char *d = s->data;
    Py_ssize_t i = 0, size = s->size;
    while (i < size) {
        char c = d[i];
        switch (c) {
        case '"': {
            Py_ssize_t end = string_end(d, size, i);
            if (end < 0) return 1;
            Level *lv = s->depth ? &s->levels[s->depth - 1] : NULL;
            if (lv != NULL && lv->kind == '{' && lv->expect_key) {
                if (grow((void **)&s->keys, &s->keys_cap, s->nkeys + 1, sizeof(Key)) < 0) return -1;
                Key *k = &s->keys[s->nkeys];
                Py_ssize_t start = i + 1, stop = end - 1;
                if (memchr(d + start, '\\', (size_t)(stop - start)) != NULL) {
                    int rc = decode_key(s, start, stop, k);
                    if (rc) return rc;
                } else {
                    k->off = start;
                    k->len = stop - start;
                    k->decoded = 0;
                }
                k->hash = hash_bytes(key_bytes(s, k), k->len);
                s->nkeys++;
                int found;
                if (repeats(s, lv, &found) < 0) return -1;
                if (found && report(s) < 0) return -1;
                lv->current = s->nkeys - 1;
                lv->expect_key = 0;
            }
            i = end;
            break;
        }
        case '{':
        case '[':
            /* a value where an object expects a key: not JSON (and no key to name it by) */
            if (s->depth && s->levels[s->depth - 1].kind == '{' && s->levels[s->depth - 1].expect_key) return 1;
            if (push(s, c) < 0) return -1;
            i++;
            break;
        case '}':
        case ']': {
            if (s->depth == 0) return 1;
            Level *lv = &s->levels[--s->depth];
            if ((c == '}') != (lv->kind == '{')) return 1;
            if (lv->kind == '{') {
                s->nkeys = lv->first;
                s->arena_len = lv->arena_mark;
            }
            i++;
            break;
        }
        case ',':
            if (s->depth) {
                Level *lv = &s->levels[s->depth - 1];
                if (lv->kind == '{') lv->expect_key = 1;
                else lv->index++;
            }
            i++;
            break;
        default:
            i++;
        }
    }
    return s->depth ? 1 : 0;
}

static PyObject *scan(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    Scan s;
    memset(&s, 0, sizeof s);
    s.data = view.buf;
    s.size = view.len;
    s.out = PyList_New(0);
    int rc = s.out ? run(&s) : -1;
    for (Py_ssize_t j = 0; j < s.levels_cap; j++) PyMem_Free(s.levels[j].table);
    PyMem_Free(s.levels);
    PyMem_Free(s.keys);
    PyMem_Free(s.arena);
    PyMem_Free(s.path);
    PyBuffer_Release(&view);
    if (rc < 0) {
        Py_XDECREF(s.out);
        return NULL;
    }
    if (rc > 0) {
        Py_DECREF(s.out);
        Py_RETURN_NONE;
    }
    return s.out;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_O,
     "scan(data) -> list[(pointer, key)] | None: every key that repeats an earlier key of its object, in "
     "text order; None when the bytes are not JSON the scanner can follow."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_dupscan", "Repeated JSON object keys, found by one scan "
                                    "of the bytes (engine/duplicates.py).", -1, methods};

PyMODINIT_FUNC PyInit__dupscan(void) { return PyModule_Create(&module); }
