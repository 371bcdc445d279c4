/*
 * asyncmongo.bson._cencode: the compiled twin of asyncmongo/bson/_encode.py.
 *
 * One public function, encode(document, check_keys, codec_options) -> bytes, observably the
 * same as asyncmongo.bson.codec._py_encode: same bytes, same exception types and messages.
 * The pure encoder stays the reference. This file writes natively what is common and cheap
 * to get exactly right: dict, list, tuple and any Mapping (via items()), str, int, float,
 * bool, None, datetime, ObjectId, Int64, bytes, Binary, Decimal128, Timestamp, MinKey,
 * MaxKey, Undefined, RawBSONDocument, Code (with scope), Regex, Symbol, DatetimeMS, and
 * uuid.UUID under STANDARD/PYTHON_LEGACY. Every other value (subclasses the reference maps,
 * values with a _type_marker such as PyMongo's bson types, re.Pattern, DBRef, DBPointer,
 * other UUID representations, unknown types) and every tampered instance of a native type
 * goes to the reference's own per-value encoder, found by the reference's own lookup
 * (_ENCODERS, then _fallback_encoder), run on a scratch bytearray: those behave like the
 * reference by construction. A top-level document whose class has RawBSONDocument's
 * _type_marker is its .raw, as in the reference.
 *
 * The order of checks follows _encode.encode_document element by element (e.g. a str value
 * is encoded before its key is validated, an Int64's range is checked before its key), so
 * an input with two faults reports the same one. Exact-str keys are validated here; any
 * other key goes through the reference's key caches and _typed_key.
 *
 * Writes go to one growable buffer (a small inline array first, then realloc doubling);
 * each document reserves its length and patches it in place. Nesting is bounded by a depth
 * counter (MAX_NESTING_DEPTH, as the reference), not by the C stack; each nested document
 * also counts as one Python recursion level, so stack exhaustion reads as in the reference.
 *
 * Known, deliberate differences (none reachable by ordinary values): an aware datetime's
 * tzinfo.utcoffset() is called once (the reference calls it twice); the arguments are
 * positional only; non-ASCII str values keep their cached UTF-8 (PyUnicode_AsUTF8AndSize).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <datetime.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* CPython 3.13 added a with_exceptions argument to _PyLong_AsByteArray. */
#if PY_VERSION_HEX >= 0x030D0000
#define LONG_AS_BYTES(v, out, n, little, is_signed) \
    _PyLong_AsByteArray((PyLongObject *)(v), (out), (n), (little), (is_signed), 1)
#else
#define LONG_AS_BYTES(v, out, n, little, is_signed) \
    _PyLong_AsByteArray((PyLongObject *)(v), (out), (n), (little), (is_signed))
#endif

#define INDEX_COUNT 1024 /* _encode._INDEX_COUNT: zip() over the precomputed index keys */
#define INLINE_SIZE 512

/* -- what we borrow from the reference, looked up once at import -- */

static PyObject *Mapping;            /* collections.abc.Mapping */
static PyObject *ListOrTuple;        /* (list, tuple), as _array_items' isinstance */
static PyObject *StructError;        /* struct.error */
static PyObject *InvalidDocument;
static PyObject *InvalidStringData;
static PyTypeObject *ObjectIdType, *Int64Type, *BinaryType, *Decimal128Type, *TimestampType;
static PyTypeObject *RawType, *CodeType, *RegexType, *SymbolType, *DatetimeMSType, *UUIDType;
static PyObject *Encoders;           /* _encode._ENCODERS (exact type -> encoder) */
static PyObject *FallbackEncoder;    /* _encode._fallback_encoder(key, value) */
static PyObject *TypedKey;           /* _encode._typed_key(cache, type_byte, key) */
static PyObject *EncDocument, *EncArray, *EncRaw, *EncBinary, *EncDecimal128, *EncTimestamp;
static PyObject *EncMinKey, *EncMaxKey, *EncUndefined;
static PyObject *EncCode, *EncRegex, *EncSymbol, *EncDatetimeMS, *EncUuid;
static PyObject *UuidStandard, *UuidPythonLegacy; /* UuidRepresentation members */
static PyObject *UnpackPair;        /* def unpack_pair(item): key, value = item; ... */
static PyObject *IsRawDocumentClass; /* codec_options.is_raw_document_class (by _type_marker) */
static PyObject *AsCodecOptions;     /* codec_options.as_codec_options (PyMongo's converted) */
static PyObject *CodecOptionsType;
static long MaxNestingDepth;
static PyObject *EmptyStr;
static PyObject *StrItems, *StrRaw, *StrBinaryAttr, *StrSubtype, *StrBits, *StrInc, *StrTime;
static PyObject *StrUtcoffset, *StrStartswith, *StrDollar, *StrDot;
static PyObject *StrScope, *StrPattern, *StrFlags, *StrInt, *StrUuidRepresentation;
static PyObject *StrTypeRegistry, *StrFallbackEncoder, *EncInt64;

/* Per BSON type: the reference's prefix cache (key -> type byte + key + NUL) and the type
 * byte as bytes, used for keys that are not exact str (see write_key). */
enum {
    K_DOUBLE, K_STRING, K_DOC, K_ARRAY, K_BINARY, K_OID, K_BOOL, K_DATE, K_NULL,
    K_INT32, K_TIMESTAMP, K_INT64, K_DECIMAL, K_MIN, K_MAX,
    K_UNDEFINED, K_REGEX, K_CODE, K_SYMBOL, K_CODE_W_SCOPE, K_COUNT
};
static const char KEY_TYPE_BYTES[K_COUNT] = {
    0x01, 0x02, 0x03, 0x04, 0x05, 0x07, 0x08, 0x09, 0x0A,
    0x10, 0x11, 0x12, 0x13, (char)0xFF, 0x7F,
    0x06, 0x0B, 0x0D, 0x0E, 0x0F,
};
static const char *const KEY_CACHE_NAMES[K_COUNT] = {
    "_DOUBLE_KEYS", "_STR_KEYS", "_DOC_KEYS", "_ARRAY_KEYS", "_BINARY_KEYS", "_OID_KEYS",
    "_BOOL_KEYS", "_DATE_KEYS", "_NULL_KEYS", "_INT32_KEYS", "_TIMESTAMP_KEYS",
    "_INT64_KEYS", "_DECIMAL_KEYS", "_MIN_KEY_KEYS", "_MAX_KEY_KEYS",
    "_UNDEFINED_KEYS", "_REGEX_KEYS", "_CODE_KEYS", "_SYMBOL_KEYS", "_CODE_W_SCOPE_KEYS",
};
static PyObject *KeyCaches[K_COUNT];
static PyObject *KeyTypeBytes[K_COUNT];

/* -- the output buffer -- */

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
    char inline_data[INLINE_SIZE];
} Buffer;

static void buffer_init(Buffer *b) {
    b->data = b->inline_data;
    b->len = 0;
    b->cap = INLINE_SIZE;
}

static void buffer_free(Buffer *b) {
    if (b->data != b->inline_data) {
        PyMem_Free(b->data);
    }
}

static int buffer_grow(Buffer *b, Py_ssize_t extra) {
    if (extra > PY_SSIZE_T_MAX / 2 - b->len) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t need = b->len + extra;
    Py_ssize_t cap = b->cap * 2;
    if (cap < need) {
        cap = need;
    }
    char *data;
    if (b->data == b->inline_data) {
        data = PyMem_Malloc((size_t)cap);
        if (data != NULL) {
            memcpy(data, b->data, (size_t)b->len);
        }
    } else {
        data = PyMem_Realloc(b->data, (size_t)cap);
    }
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static inline int buffer_reserve(Buffer *b, Py_ssize_t extra) {
    if (b->cap - b->len >= extra) {
        return 0;
    }
    return buffer_grow(b, extra);
}

static inline void put_byte(Buffer *b, char c) { b->data[b->len++] = c; }

static inline void put_bytes(Buffer *b, const char *s, Py_ssize_t n) {
    memcpy(b->data + b->len, s, (size_t)n);
    b->len += n;
}

static inline void put_le32(Buffer *b, uint32_t v) {
    unsigned char *p = (unsigned char *)b->data + b->len;
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
    b->len += 4;
}

static inline void put_le64(Buffer *b, uint64_t v) {
    put_le32(b, (uint32_t)v);
    put_le32(b, (uint32_t)(v >> 32));
}

static inline void patch_le32(Buffer *b, Py_ssize_t at, uint32_t v) {
    unsigned char *p = (unsigned char *)b->data + at;
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* Append any bytes-like object, as ``bytearray += obj`` does (same TypeError otherwise). */
static int append_buffer(Buffer *b, PyObject *obj) {
    if (PyBytes_Check(obj)) {
        Py_ssize_t n = PyBytes_GET_SIZE(obj);
        if (buffer_reserve(b, n) < 0) {
            return -1;
        }
        put_bytes(b, PyBytes_AS_STRING(obj), n);
        return 0;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) != 0) {
        PyErr_Format(PyExc_TypeError, "can't concat %.100s to bytearray", Py_TYPE(obj)->tp_name);
        return -1;
    }
    int rc = buffer_reserve(b, view.len);
    if (rc == 0) {
        put_bytes(b, view.buf, view.len);
    }
    PyBuffer_Release(&view);
    return rc;
}

/* struct.error from the reference's pack("<i", n) of a length over 2 GiB, as _py_encode
 * turns it into InvalidDocument. */
static int too_large(void) {
    PyErr_SetString(InvalidDocument,
                    "value too large for BSON: 'i' format requires "
                    "-2147483648 <= number <= 2147483647");
    return -1;
}

static inline int put_length(Buffer *b, Py_ssize_t n) {
    if (n > INT32_MAX) {
        return too_large();
    }
    put_le32(b, (uint32_t)n);
    return 0;
}

/* -- keys -- */

/* The element prefix: type byte, key, NUL. Exact str keys are validated here as the
 * reference's _encode_key does; any other key goes through the reference's own prefix cache
 * and _typed_key (so non-str keys, str subclasses and unhashable keys fail identically). */
static int write_key(Buffer *b, int kind, PyObject *key) {
    if (PyUnicode_CheckExact(key)) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(key, &n);
        if (s == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
                return -1;
            }
            PyErr_Clear();
            PyErr_Format(InvalidStringData, "key %R is not valid UTF-8 (lone surrogate)", key);
            return -1;
        }
        if (memchr(s, 0, (size_t)n) != NULL) {
            PyErr_Format(InvalidDocument, "key %R must not contain a NUL character", key);
            return -1;
        }
        if (buffer_reserve(b, n + 2) < 0) {
            return -1;
        }
        put_byte(b, KEY_TYPE_BYTES[kind]);
        put_bytes(b, s, n);
        put_byte(b, 0);
        return 0;
    }
    PyObject *prefix = PyDict_GetItemWithError(KeyCaches[kind], key);
    if (prefix != NULL) {
        Py_INCREF(prefix);
        int truth = PyObject_IsTrue(prefix);
        if (truth < 0) {
            Py_DECREF(prefix);
            return -1;
        }
        if (!truth) {
            Py_CLEAR(prefix);
        }
    } else if (PyErr_Occurred()) {
        return -1;
    }
    if (prefix == NULL) {
        prefix = PyObject_CallFunctionObjArgs(TypedKey, KeyCaches[kind], KeyTypeBytes[kind], key,
                                              NULL);
        if (prefix == NULL) {
            return -1;
        }
    }
    int rc = append_buffer(b, prefix);
    Py_DECREF(prefix);
    return rc;
}

/* Array index keys "0", "1", ...: always valid, written directly. */
static int write_index_key(Buffer *b, char type_byte, Py_ssize_t index) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + index % 10);
        index /= 10;
    } while (index > 0);
    if (buffer_reserve(b, n + 2) < 0) {
        return -1;
    }
    put_byte(b, type_byte);
    while (n > 0) {
        put_byte(b, digits[--n]);
    }
    put_byte(b, 0);
    return 0;
}

/* -- documents -- */

typedef struct {
    PyObject *opts;
} Ctx;

static int write_value(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value,
                       const Ctx *ctx, long depth);

/* The start of encode_document: the depth check, the reserved length. */
static int begin_document(Buffer *b, long depth, Py_ssize_t *start) {
    if (depth > MaxNestingDepth) {
        PyErr_Format(InvalidDocument, "document nested deeper than %ld levels", MaxNestingDepth);
        return -1;
    }
    if (Py_EnterRecursiveCall(" while encoding a BSON document")) {
        return -1;
    }
    if (buffer_reserve(b, 4) < 0) {
        Py_LeaveRecursiveCall();
        return -1;
    }
    *start = b->len;
    b->len += 4;
    return 0;
}

static int end_document(Buffer *b, Py_ssize_t start) {
    Py_LeaveRecursiveCall();
    if (buffer_reserve(b, 1) < 0) {
        return -1;
    }
    put_byte(b, 0);
    Py_ssize_t size = b->len - start;
    if (size > INT32_MAX) {
        return too_large();
    }
    patch_le32(b, start, (uint32_t)size);
    return 0;
}

/* An exact dict, iterated as ``for key, value in d.items()`` would: PyDict_Next with the
 * dict iterator's checks (size changed, keys changed), references held while encoding. */
static int write_dict(Buffer *b, PyObject *dict, const Ctx *ctx, long depth) {
    Py_ssize_t start;
    if (begin_document(b, depth, &start) < 0) {
        return -1;
    }
    Py_ssize_t used = PyDict_GET_SIZE(dict);
    Py_ssize_t remaining = used;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    for (;;) {
        if (PyDict_GET_SIZE(dict) != used) {
            PyErr_SetString(PyExc_RuntimeError, "dictionary changed size during iteration");
            goto fail;
        }
        if (!PyDict_Next(dict, &pos, &key, &value)) {
            break;
        }
        if (remaining == 0) {
            PyErr_SetString(PyExc_RuntimeError, "dictionary keys changed during iteration");
            goto fail;
        }
        remaining--;
        Py_INCREF(key);
        Py_INCREF(value);
        int rc = write_value(b, key, -1, value, ctx, depth);
        Py_DECREF(key);
        Py_DECREF(value);
        if (rc < 0) {
            goto fail;
        }
    }
    return end_document(b, start);
fail:
    Py_LeaveRecursiveCall();
    return -1;
}

/* ``key, value = item``: exact 2-tuples and 2-lists directly, any other shape through a
 * two-line Python function, so the interpreter's own errors (wrong length, not iterable)
 * come out, worded as this Python version words them. */
static int unpack_pair(PyObject *item, PyObject **key, PyObject **value) {
    if (PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) == 2) {
        *key = PyTuple_GET_ITEM(item, 0);
        *value = PyTuple_GET_ITEM(item, 1);
    } else if (PyList_CheckExact(item) && PyList_GET_SIZE(item) == 2) {
        *key = PyList_GET_ITEM(item, 0);
        *value = PyList_GET_ITEM(item, 1);
    } else {
        PyObject *pair = PyObject_CallOneArg(UnpackPair, item);
        if (pair == NULL) {
            return -1;
        }
        /* UnpackPair returns a fresh 2-tuple */
        *key = PyTuple_GET_ITEM(pair, 0);
        *value = PyTuple_GET_ITEM(pair, 1);
        Py_INCREF(*key);
        Py_INCREF(*value);
        Py_DECREF(pair);
        return 0;
    }
    Py_INCREF(*key);
    Py_INCREF(*value);
    return 0;
}

/* encode_document over any iterable of (key, value) pairs (a Mapping's items()). */
static int write_items(Buffer *b, PyObject *items, const Ctx *ctx, long depth) {
    Py_ssize_t start;
    if (begin_document(b, depth, &start) < 0) {
        return -1;
    }
    PyObject *it = PyObject_GetIter(items);
    if (it == NULL) {
        goto fail;
    }
    PyObject *item;
    while ((item = PyIter_Next(it)) != NULL) {
        PyObject *key, *value;
        int rc = unpack_pair(item, &key, &value);
        Py_DECREF(item);
        if (rc < 0) {
            goto fail_it;
        }
        rc = write_value(b, key, -1, value, ctx, depth);
        Py_DECREF(key);
        Py_DECREF(value);
        if (rc < 0) {
            goto fail_it;
        }
    }
    if (PyErr_Occurred()) {
        goto fail_it;
    }
    Py_DECREF(it);
    return end_document(b, start);
fail_it:
    Py_DECREF(it);
fail:
    Py_LeaveRecursiveCall();
    return -1;
}

/* _enc_document: ``value.items()`` then encode_document. */
static int write_mapping(Buffer *b, PyObject *mapping, const Ctx *ctx, long depth) {
    PyObject *items = PyObject_CallMethodNoArgs(mapping, StrItems);
    if (items == NULL) {
        return -1;
    }
    int rc = write_items(b, items, ctx, depth);
    Py_DECREF(items);
    return rc;
}

/* An exact list or tuple: zip(_INDEX_KEYS, seq) stops at INDEX_COUNT when the sequence was
 * that short at the start; a longer one is enumerated to its end. The length is re-read
 * every step, as the list iterator does. */
static int write_sequence(Buffer *b, PyObject *seq, const Ctx *ctx, long depth) {
    int is_list = PyList_CheckExact(seq);
    Py_ssize_t limit = is_list ? PyList_GET_SIZE(seq) : PyTuple_GET_SIZE(seq);
    limit = limit <= INDEX_COUNT ? INDEX_COUNT : PY_SSIZE_T_MAX;
    Py_ssize_t start;
    if (begin_document(b, depth, &start) < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < limit; i++) {
        PyObject *item;
        if (is_list) {
            if (i >= PyList_GET_SIZE(seq)) {
                break;
            }
            item = PyList_GET_ITEM(seq, i);
        } else {
            if (i >= PyTuple_GET_SIZE(seq)) {
                break;
            }
            item = PyTuple_GET_ITEM(seq, i);
        }
        Py_INCREF(item);
        int rc = write_value(b, NULL, i, item, ctx, depth);
        Py_DECREF(item);
        if (rc < 0) {
            Py_LeaveRecursiveCall();
            return -1;
        }
    }
    return end_document(b, start);
}

/* _enc_array for anything but an exact list/tuple: _array_items' isinstance, len() and
 * iter() in the reference's order (iter() before the depth check only when zip() is used). */
static int write_array_generic(Buffer *b, PyObject *value, const Ctx *ctx, long depth) {
    int rc = -1;
    PyObject *it = NULL;
    int is_seq = PyObject_IsInstance(value, ListOrTuple);
    if (is_seq < 0) {
        return -1;
    }
    PyObject *seq = is_seq ? (Py_INCREF(value), value) : PySequence_List(value);
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t n = PyObject_Size(seq);
    if (n < 0) {
        goto done;
    }
    Py_ssize_t limit = n <= INDEX_COUNT ? INDEX_COUNT : PY_SSIZE_T_MAX;
    if (n <= INDEX_COUNT && (it = PyObject_GetIter(seq)) == NULL) {
        goto done;
    }
    Py_ssize_t start;
    if (begin_document(b, depth, &start) < 0) {
        goto done;
    }
    if (it == NULL && (it = PyObject_GetIter(seq)) == NULL) {
        goto fail_doc;
    }
    for (Py_ssize_t i = 0; i < limit; i++) {
        PyObject *item = PyIter_Next(it);
        if (item == NULL) {
            if (PyErr_Occurred()) {
                goto fail_doc;
            }
            break;
        }
        int item_rc = write_value(b, NULL, i, item, ctx, depth);
        Py_DECREF(item);
        if (item_rc < 0) {
            goto fail_doc;
        }
    }
    rc = end_document(b, start);
    goto done;
fail_doc:
    Py_LeaveRecursiveCall();
done:
    Py_XDECREF(it);
    Py_DECREF(seq);
    return rc;
}

/* -- values -- */

/* The element's prefix, for a key (documents) or an index (arrays). */
static inline int prefix(Buffer *b, int kind, PyObject *key, Py_ssize_t index) {
    if (key == NULL) {
        return write_index_key(b, KEY_TYPE_BYTES[kind], index);
    }
    return write_key(b, kind, key);
}

/* The key as the reference sees it: array elements get str(index). */
static PyObject *key_object(PyObject *key, Py_ssize_t index) {
    if (key != NULL) {
        Py_INCREF(key);
        return key;
    }
    return PyUnicode_FromFormat("%zd", index);
}

static int call_encoder(Buffer *b, PyObject *encoder, PyObject *key, Py_ssize_t index,
                        PyObject *value, const Ctx *ctx, long depth);

/* Whether the options' type registry has a fallback encoder (which gets ints beyond int64,
 * as in PyMongo): 1, 0, or -1 with an error. */
static int has_fallback(const Ctx *ctx) {
    PyObject *registry = PyObject_GetAttr(ctx->opts, StrTypeRegistry);
    if (registry == NULL) {
        return -1;
    }
    PyObject *fallback = PyObject_GetAttr(registry, StrFallbackEncoder);
    Py_DECREF(registry);
    if (fallback == NULL) {
        return -1;
    }
    Py_DECREF(fallback);
    return fallback != Py_None;
}

/* An int beyond int64 with a fallback encoder: the reference's _enc_int64 hands it over. */
static __attribute__((noinline)) int write_big_int(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value,
                         const Ctx *ctx, long depth, int *handled) {
    int fallback = has_fallback(ctx);
    *handled = fallback != 0;
    if (fallback <= 0) {
        return fallback;
    }
    return call_encoder(b, EncInt64, key, index, value, ctx, depth);
}

/* ``f"key {key!r}: int {value} does not fit in a BSON int64"`` */
static int int64_overflow(PyObject *key, Py_ssize_t index, PyObject *value) {
    PyObject *k = key_object(key, index);
    if (k == NULL) {
        return -1;
    }
    PyObject *text = PyObject_Format(value, EmptyStr);
    if (text != NULL) {
        PyErr_Format(InvalidDocument, "key %R: int %U does not fit in a BSON int64", k, text);
        Py_DECREF(text);
    }
    Py_DECREF(k);
    return -1;
}

/* A value the reference encodes with ``encoder(buf, key, value, opts, depth)``: run it on a
 * scratch bytearray and append what it wrote. */
static int call_encoder(Buffer *b, PyObject *encoder, PyObject *key, Py_ssize_t index,
                        PyObject *value, const Ctx *ctx, long depth) {
    PyObject *k = key_object(key, index);
    if (k == NULL) {
        return -1;
    }
    PyObject *scratch = PyByteArray_FromStringAndSize(NULL, 0);
    PyObject *d = scratch == NULL ? NULL : PyLong_FromLong(depth);
    int rc = -1;
    if (d != NULL) {
        PyObject *args[5] = {scratch, k, value, ctx->opts, d};
        PyObject *res = PyObject_Vectorcall(encoder, args, 5, NULL);
        if (res != NULL) {
            Py_DECREF(res);
            Py_ssize_t n = PyByteArray_GET_SIZE(scratch);
            if (buffer_reserve(b, n) == 0) {
                put_bytes(b, PyByteArray_AS_STRING(scratch), n);
                rc = 0;
            }
        }
    }
    Py_XDECREF(d);
    Py_XDECREF(scratch);
    Py_DECREF(k);
    return rc;
}

/* Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static inline int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* datetime_to_ms for an exact datetime: microseconds since the epoch as a naive (UTC) time,
 * minus utcoffset() when there is one, truncated toward negative infinity. */
static int datetime_ms(PyObject *value, int64_t *ms) {
    int64_t days = days_from_civil(PyDateTime_GET_YEAR(value), PyDateTime_GET_MONTH(value),
                                   PyDateTime_GET_DAY(value));
    int64_t us = ((days * 86400 + PyDateTime_DATE_GET_HOUR(value) * 3600 +
                   PyDateTime_DATE_GET_MINUTE(value) * 60 + PyDateTime_DATE_GET_SECOND(value)) *
                  1000000) +
                 PyDateTime_DATE_GET_MICROSECOND(value);
    PyObject *tz = PyDateTime_DATE_GET_TZINFO(value);
    if (tz != Py_None && tz != PyDateTime_TimeZone_UTC) {
        PyObject *offset = PyObject_CallMethodNoArgs(value, StrUtcoffset);
        if (offset == NULL) {
            return -1;
        }
        if (offset != Py_None) { /* datetime.utcoffset() checked it is a timedelta */
            us -= ((int64_t)PyDateTime_DELTA_GET_DAYS(offset) * 86400 +
                   PyDateTime_DELTA_GET_SECONDS(offset)) *
                      1000000 +
                  PyDateTime_DELTA_GET_MICROSECONDS(offset);
        }
        Py_DECREF(offset);
    }
    *ms = floor_div(us, 1000);
    return 0;
}

static int write_str(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value) {
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(value, &n); /* value.encode() comes first */
    if (s == NULL || prefix(b, K_STRING, key, index) < 0) {
        return -1;
    }
    if (n >= INT32_MAX) {
        return too_large();
    }
    if (buffer_reserve(b, n + 5) < 0) {
        return -1;
    }
    put_le32(b, (uint32_t)(n + 1));
    put_bytes(b, s, n);
    put_byte(b, 0);
    return 0;
}

static int write_int(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value,
                     const Ctx *ctx, long depth) {
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (__builtin_expect(overflow, 0)) {
        int handled;
        int rc = write_big_int(b, key, index, value, ctx, depth, &handled);
        if (handled) {
            return rc;
        }
    }
    if (!overflow && v >= INT32_MIN && v <= INT32_MAX) {
        if (prefix(b, K_INT32, key, index) < 0 || buffer_reserve(b, 4) < 0) {
            return -1;
        }
        put_le32(b, (uint32_t)(int32_t)v);
        return 0;
    }
    if (prefix(b, K_INT64, key, index) < 0) {
        return -1;
    }
    if (overflow) {
        return int64_overflow(key, index, value);
    }
    if (buffer_reserve(b, 8) < 0) {
        return -1;
    }
    put_le64(b, (uint64_t)v);
    return 0;
}

static int write_int64(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value,
                       const Ctx *ctx, long depth) {
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (__builtin_expect(overflow, 0)) { /* the range check comes before the key for Int64 */
        int handled;
        int rc = write_big_int(b, key, index, value, ctx, depth, &handled);
        if (handled) {
            return rc;
        }
        return int64_overflow(key, index, value);
    }
    if (prefix(b, K_INT64, key, index) < 0 || buffer_reserve(b, 8) < 0) {
        return -1;
    }
    put_le64(b, (uint64_t)v);
    return 0;
}

static int write_double(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value) {
    if (prefix(b, K_DOUBLE, key, index) < 0 || buffer_reserve(b, 8) < 0) {
        return -1;
    }
    if (PyFloat_Pack8(PyFloat_AS_DOUBLE(value), b->data + b->len, 1) < 0) {
        return -1;
    }
    b->len += 8;
    return 0;
}

static int write_bytes(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value) {
    Py_ssize_t n = PyBytes_GET_SIZE(value);
    if (prefix(b, K_BINARY, key, index) < 0) {
        return -1;
    }
    if (n > INT32_MAX) {
        return too_large();
    }
    if (buffer_reserve(b, n + 5) < 0) {
        return -1;
    }
    put_le32(b, (uint32_t)n);
    put_byte(b, 0);
    put_bytes(b, PyBytes_AS_STRING(value), n);
    return 0;
}

static int write_object_id(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value) {
    if (prefix(b, K_OID, key, index) < 0) {
        return -1;
    }
    PyObject *raw = PyObject_GetAttr(value, StrBinaryAttr);
    if (raw == NULL) {
        return -1;
    }
    int rc = append_buffer(b, raw);
    Py_DECREF(raw);
    return rc;
}

static int write_datetime(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value) {
    int64_t ms;
    if (prefix(b, K_DATE, key, index) < 0 || datetime_ms(value, &ms) < 0 ||
        buffer_reserve(b, 8) < 0) {
        return -1;
    }
    put_le64(b, (uint64_t)ms);
    return 0;
}

/* An exact Binary whose subtype is an int in 0..255 (else: the reference's _enc_binary). */
static int write_binary(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value,
                        const Ctx *ctx, long depth) {
    PyObject *subtype_obj = PyObject_GetAttr(value, StrSubtype);
    if (subtype_obj == NULL) {
        return -1;
    }
    long subtype = PyLong_CheckExact(subtype_obj) ? PyLong_AsLong(subtype_obj) : -1;
    Py_DECREF(subtype_obj);
    if (subtype < 0 || subtype > 255) {
        PyErr_Clear();
        return call_encoder(b, EncBinary, key, index, value, ctx, depth);
    }
    if (prefix(b, K_BINARY, key, index) < 0) {
        return -1;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(value);
    if (n > INT32_MAX - (subtype == 2 ? 4 : 0)) {
        return too_large();
    }
    if (buffer_reserve(b, n + 9) < 0) {
        return -1;
    }
    if (subtype == 2) { /* the old binary subtype repeats the length inside the payload */
        put_le32(b, (uint32_t)(n + 4));
        put_byte(b, 2);
        put_le32(b, (uint32_t)n);
    } else {
        put_le32(b, (uint32_t)n);
        put_byte(b, (char)subtype);
    }
    put_bytes(b, PyBytes_AS_STRING(value), n);
    return 0;
}

/* An exact Decimal128 whose _bits fit 128 unsigned bits (else: the reference's encoder). */
static int write_decimal128(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value,
                            const Ctx *ctx, long depth) {
    PyObject *bits = PyObject_GetAttr(value, StrBits);
    if (bits == NULL) {
        return -1;
    }
    unsigned char bid[16];
    int ok = PyLong_CheckExact(bits) && LONG_AS_BYTES(bits, bid, 16, 1, 0) == 0;
    Py_DECREF(bits);
    if (!ok) {
        PyErr_Clear();
        return call_encoder(b, EncDecimal128, key, index, value, ctx, depth);
    }
    if (prefix(b, K_DECIMAL, key, index) < 0 || buffer_reserve(b, 16) < 0) {
        return -1;
    }
    put_bytes(b, (const char *)bid, 16);
    return 0;
}

static int uint32_field(PyObject *obj, PyObject *name, uint32_t *out) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL) {
        return -1;
    }
    int ok = 0;
    if (PyLong_CheckExact(v)) {
        unsigned long u = PyLong_AsUnsignedLong(v);
        ok = !(u == (unsigned long)-1 && PyErr_Occurred()) && u <= UINT32_MAX;
    }
    if (ok) {
        *out = (uint32_t)PyLong_AsUnsignedLong(v);
    }
    Py_DECREF(v);
    return ok ? 1 : 0;
}

/* An exact Timestamp whose fields are uint32 ints (else: the reference's encoder). */
static int write_timestamp(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value,
                           const Ctx *ctx, long depth) {
    uint32_t inc = 0, time = 0;
    int ok = uint32_field(value, StrInc, &inc);
    if (ok > 0) {
        ok = uint32_field(value, StrTime, &time);
    }
    if (ok < 0 && !PyErr_ExceptionMatches(PyExc_AttributeError)) {
        return -1;
    }
    if (ok <= 0) {
        PyErr_Clear();
        return call_encoder(b, EncTimestamp, key, index, value, ctx, depth);
    }
    if (prefix(b, K_TIMESTAMP, key, index) < 0 || buffer_reserve(b, 8) < 0) {
        return -1;
    }
    put_le32(b, inc);
    put_le32(b, time);
    return 0;
}

static int write_raw(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value) {
    if (prefix(b, K_DOC, key, index) < 0) {
        return -1;
    }
    PyObject *raw = PyObject_GetAttr(value, StrRaw);
    if (raw == NULL) {
        return -1;
    }
    int rc = append_buffer(b, raw);
    Py_DECREF(raw);
    return rc;
}

/* A BSON string body (int32 length with the NUL, bytes, NUL). */
static int put_string(Buffer *b, const char *s, Py_ssize_t n) {
    if (n >= INT32_MAX) {
        return too_large();
    }
    if (buffer_reserve(b, n + 5) < 0) {
        return -1;
    }
    put_le32(b, (uint32_t)(n + 1));
    put_bytes(b, s, n);
    put_byte(b, 0);
    return 0;
}

/* An exact Code: _enc_code (value.encode() and .scope before the key; with a scope, the
 * code_w_scope length patched around the string and the scope document). */
static int write_code(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value,
                      const Ctx *ctx, long depth) {
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(value, &n);
    if (s == NULL) {
        return -1;
    }
    PyObject *scope = PyObject_GetAttr(value, StrScope);
    if (scope == NULL) {
        return -1;
    }
    int rc = -1;
    if (scope == Py_None) {
        if (prefix(b, K_CODE, key, index) == 0) {
            rc = put_string(b, s, n);
        }
        Py_DECREF(scope);
        return rc;
    }
    if (prefix(b, K_CODE_W_SCOPE, key, index) == 0 && buffer_reserve(b, 4) == 0) {
        Py_ssize_t start = b->len;
        b->len += 4;
        if (put_string(b, s, n) == 0 &&
            (PyDict_CheckExact(scope) ? write_dict(b, scope, ctx, depth + 1)
                                      : write_mapping(b, scope, ctx, depth + 1)) == 0) {
            Py_ssize_t size = b->len - start;
            rc = size > INT32_MAX ? too_large() : 0;
            if (rc == 0) {
                patch_le32(b, start, (uint32_t)size);
            }
        }
    }
    Py_DECREF(scope);
    return rc;
}

/* An exact Symbol: _enc_symbol writes the key before encoding the string. */
static int write_symbol(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value) {
    if (prefix(b, K_SYMBOL, key, index) < 0) {
        return -1;
    }
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(value, &n);
    return s == NULL ? -1 : put_string(b, s, n);
}

#define MAX_NATIVE_FLAGS 32

/* An exact Regex with str pattern and ASCII flags, neither holding a NUL (anything else goes
 * to the reference's _enc_regex, which raises its own errors). Flags are written sorted. */
static int write_regex(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value,
                       const Ctx *ctx, long depth) {
    PyObject *pattern = PyObject_GetAttr(value, StrPattern);
    PyObject *flags = pattern == NULL ? NULL : PyObject_GetAttr(value, StrFlags);
    Py_ssize_t pn = 0, fn = 0;
    const char *ps = NULL;
    char sorted[MAX_NATIVE_FLAGS];
    int native = flags != NULL && PyUnicode_CheckExact(pattern) && PyUnicode_CheckExact(flags) &&
                 PyUnicode_IS_ASCII(flags) &&
                 (fn = PyUnicode_GET_LENGTH(flags)) <= MAX_NATIVE_FLAGS &&
                 (ps = PyUnicode_AsUTF8AndSize(pattern, &pn)) != NULL &&
                 memchr(ps, 0, (size_t)pn) == NULL;
    if (native) {
        memcpy(sorted, PyUnicode_DATA(flags), (size_t)fn);
        for (Py_ssize_t i = 1; i < fn; i++) { /* insertion sort: a handful of letters */
            char c = sorted[i];
            Py_ssize_t j = i;
            for (; j > 0 && (unsigned char)sorted[j - 1] > (unsigned char)c; j--) {
                sorted[j] = sorted[j - 1];
            }
            sorted[j] = c;
        }
        native = memchr(sorted, 0, (size_t)fn) == NULL;
    }
    int rc;
    if (!native) {
        PyErr_Clear();
        rc = call_encoder(b, EncRegex, key, index, value, ctx, depth);
    } else if ((rc = prefix(b, K_REGEX, key, index)) == 0 &&
               (rc = buffer_reserve(b, pn + fn + 2)) == 0) {
        put_bytes(b, ps, pn);
        put_byte(b, 0);
        put_bytes(b, sorted, fn);
        put_byte(b, 0);
    }
    Py_XDECREF(pattern);
    Py_XDECREF(flags);
    return rc;
}

/* An exact DatetimeMS that fits int64 (else the reference's struct error). */
static int write_datetime_ms(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value,
                             const Ctx *ctx, long depth) {
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow) {
        return call_encoder(b, EncDatetimeMS, key, index, value, ctx, depth);
    }
    if (prefix(b, K_DATE, key, index) < 0 || buffer_reserve(b, 8) < 0) {
        return -1;
    }
    put_le64(b, (uint64_t)v);
    return 0;
}

/* An exact uuid.UUID under STANDARD (subtype 4) or PYTHON_LEGACY (subtype 3): its 16
 * big-endian bytes, as Binary.from_uuid. Other representations go to the reference. */
static int write_uuid(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value,
                      const Ctx *ctx, long depth) {
    PyObject *rep = PyObject_GetAttr(ctx->opts, StrUuidRepresentation);
    int subtype = rep == UuidStandard ? 4 : rep == UuidPythonLegacy ? 3 : -1;
    Py_XDECREF(rep);
    unsigned char raw[16];
    int ok = 0;
    if (subtype > 0) {
        PyObject *number = PyObject_GetAttr(value, StrInt);
        ok = number != NULL && PyLong_CheckExact(number) &&
             LONG_AS_BYTES(number, raw, 16, 0, 0) == 0;
        Py_XDECREF(number);
    }
    if (!ok) {
        PyErr_Clear();
        return call_encoder(b, EncUuid, key, index, value, ctx, depth);
    }
    if (prefix(b, K_BINARY, key, index) < 0 || buffer_reserve(b, 21) < 0) {
        return -1;
    }
    put_le32(b, 16);
    put_byte(b, (char)subtype);
    put_bytes(b, (const char *)raw, 16);
    return 0;
}

/* Everything the element loop does not inline: the reference's lookup (_ENCODERS, then
 * _fallback_encoder), then natively the encoders we know, else the encoder itself. */
static int write_other(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value,
                       const Ctx *ctx, long depth) {
    PyTypeObject *t = Py_TYPE(value);
    PyObject *encoder = PyDict_GetItemWithError(Encoders, (PyObject *)t);
    if (encoder != NULL) {
        Py_INCREF(encoder);
    } else {
        if (PyErr_Occurred()) {
            return -1;
        }
        PyObject *k = key_object(key, index);
        if (k == NULL) {
            return -1;
        }
        encoder = PyObject_CallFunctionObjArgs(FallbackEncoder, k, value, ctx->opts, NULL);
        Py_DECREF(k);
        if (encoder == NULL) {
            return -1;
        }
    }
    int rc;
    if (encoder == EncDocument) {
        rc = prefix(b, K_DOC, key, index);
        if (rc == 0) {
            rc = write_mapping(b, value, ctx, depth + 1);
        }
    } else if (encoder == EncArray) {
        rc = prefix(b, K_ARRAY, key, index);
        if (rc == 0) {
            rc = t == &PyTuple_Type ? write_sequence(b, value, ctx, depth + 1)
                                    : write_array_generic(b, value, ctx, depth + 1);
        }
    } else if (encoder == EncRaw && t == RawType) {
        rc = write_raw(b, key, index, value);
    } else if (encoder == EncBinary && t == BinaryType) {
        rc = write_binary(b, key, index, value, ctx, depth);
    } else if (encoder == EncDecimal128 && t == Decimal128Type) {
        rc = write_decimal128(b, key, index, value, ctx, depth);
    } else if (encoder == EncTimestamp && t == TimestampType) {
        rc = write_timestamp(b, key, index, value, ctx, depth);
    } else if (encoder == EncCode && t == CodeType) {
        rc = write_code(b, key, index, value, ctx, depth);
    } else if (encoder == EncRegex && t == RegexType) {
        rc = write_regex(b, key, index, value, ctx, depth);
    } else if (encoder == EncUuid && t == UUIDType) {
        rc = write_uuid(b, key, index, value, ctx, depth);
    } else if (encoder == EncDatetimeMS && t == DatetimeMSType) {
        rc = write_datetime_ms(b, key, index, value, ctx, depth);
    } else if (encoder == EncSymbol && t == SymbolType) {
        rc = write_symbol(b, key, index, value);
    } else if (encoder == EncUndefined) {
        rc = prefix(b, K_UNDEFINED, key, index);
    } else if (encoder == EncMinKey) {
        rc = prefix(b, K_MIN, key, index);
    } else if (encoder == EncMaxKey) {
        rc = prefix(b, K_MAX, key, index);
    } else {
        rc = call_encoder(b, encoder, key, index, value, ctx, depth);
    }
    Py_DECREF(encoder);
    return rc;
}

/* One element of the document being written at ``depth``: the element loop of
 * _encode.encode_document, exact types first, in the same order of checks. */
static int write_value(Buffer *b, PyObject *key, Py_ssize_t index, PyObject *value,
                       const Ctx *ctx, long depth) {
    PyTypeObject *t = Py_TYPE(value);
    if (t == &PyUnicode_Type) {
        return write_str(b, key, index, value);
    }
    if (t == &PyLong_Type) {
        return write_int(b, key, index, value, ctx, depth);
    }
    if (t == &PyFloat_Type) {
        return write_double(b, key, index, value);
    }
    if (t == &PyBool_Type) {
        if (prefix(b, K_BOOL, key, index) < 0 || buffer_reserve(b, 1) < 0) {
            return -1;
        }
        put_byte(b, value == Py_True ? 1 : 0);
        return 0;
    }
    if (t == Int64Type) {
        return write_int64(b, key, index, value, ctx, depth);
    }
    if (t == &PyDict_Type) {
        if (prefix(b, K_DOC, key, index) < 0) {
            return -1;
        }
        return write_dict(b, value, ctx, depth + 1);
    }
    if (t == &PyList_Type) {
        if (prefix(b, K_ARRAY, key, index) < 0) {
            return -1;
        }
        return write_sequence(b, value, ctx, depth + 1);
    }
    if (value == Py_None) {
        return prefix(b, K_NULL, key, index);
    }
    if (t == ObjectIdType) {
        return write_object_id(b, key, index, value);
    }
    if (t == PyDateTimeAPI->DateTimeType) {
        return write_datetime(b, key, index, value);
    }
    if (t == &PyBytes_Type) {
        return write_bytes(b, key, index, value);
    }
    return write_other(b, key, index, value, ctx, depth);
}

/* -- the entry point -- */

/* check_keys: no top-level key may start with '$' or contain '.' (codec's
 * _check_top_level_keys: ``for key in document`` with isinstance(key, str)). */
static int check_top_level_keys(PyObject *document) {
    PyObject *it = PyObject_GetIter(document);
    if (it == NULL) {
        return -1;
    }
    PyObject *key;
    while ((key = PyIter_Next(it)) != NULL) {
        int bad;
        if (PyUnicode_CheckExact(key)) {
            Py_ssize_t n = PyUnicode_GET_LENGTH(key);
            bad = (n > 0 && PyUnicode_READ_CHAR(key, 0) == '$') ||
                  PyUnicode_FindChar(key, '.', 0, n, 1) >= 0;
        } else {
            bad = PyObject_IsInstance(key, (PyObject *)&PyUnicode_Type);
            if (bad > 0) {
                PyObject *starts = PyObject_CallMethodOneArg(key, StrStartswith, StrDollar);
                bad = starts == NULL ? -1 : PyObject_IsTrue(starts);
                Py_XDECREF(starts);
                if (bad == 0) {
                    bad = PySequence_Contains(key, StrDot);
                }
            }
        }
        if (bad != 0) {
            if (bad > 0) {
                PyErr_Format(InvalidDocument, "key %R must not start with '$' or contain '.'",
                             key);
            }
            Py_DECREF(key);
            Py_DECREF(it);
            return -1;
        }
        Py_DECREF(key);
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

/* Raise ``cls(message)`` from None, as the reference's ``raise ... from None``. */
static void replace_error(PyObject *cls, PyObject *message) {
    PyObject *type, *old, *tb;
    PyErr_Fetch(&type, &old, &tb);
    PyErr_NormalizeException(&type, &old, &tb);
    if (message == NULL) { /* could not build the message: keep the original error */
        PyErr_Restore(type, old, tb);
        return;
    }
    PyErr_SetObject(cls, message);
    PyObject *ntype, *nvalue, *ntb;
    PyErr_Fetch(&ntype, &nvalue, &ntb);
    PyErr_NormalizeException(&ntype, &nvalue, &ntb);
    if (nvalue != NULL && old != NULL) {
        Py_INCREF(old);
        PyException_SetContext(nvalue, old);
        PyException_SetCause(nvalue, NULL);
    }
    PyErr_Restore(ntype, nvalue, ntb);
    Py_XDECREF(type);
    Py_XDECREF(old);
    Py_XDECREF(tb);
}

/* _py_encode's except clauses: UnicodeEncodeError, struct.error, RecursionError. */
static void translate_error(void) {
    if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError) ||
        PyErr_ExceptionMatches(StructError)) {
        int unicode = PyErr_ExceptionMatches(PyExc_UnicodeEncodeError);
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        PyObject *message = PyUnicode_FromFormat(
            unicode ? "strings must be valid UTF-8: %S" : "value too large for BSON: %S",
            value ? value : Py_None);
        if (message == NULL) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            return;
        }
        PyErr_Restore(type, value, tb);
        replace_error(unicode ? InvalidStringData : InvalidDocument, message);
        Py_XDECREF(message);
    } else if (PyErr_ExceptionMatches(PyExc_RecursionError)) {
        PyObject *message =
            PyUnicode_FromString("document nested too deeply for the Python stack");
        replace_error(InvalidDocument, message);
        Py_XDECREF(message);
    }
}

/* predicate(arg) as 1 or 0, -1 on error. */
static int call_predicate(PyObject *predicate, PyObject *arg) {
    PyObject *result = PyObject_CallOneArg(predicate, arg);
    if (result == NULL) {
        return -1;
    }
    int rc = PyObject_IsTrue(result);
    Py_DECREF(result);
    return rc;
}

static PyObject *encode_with(PyObject *document, PyObject *check_keys_arg, PyObject *opts);

static PyObject *encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError,
                     "encode() takes exactly 3 arguments (document, check_keys, "
                     "codec_options), %zd given",
                     nargs);
        return NULL;
    }
    PyObject *document = args[0];
    PyObject *converted = NULL;
    if ((PyObject *)Py_TYPE(args[2]) != CodecOptionsType) {
        converted = PyObject_CallOneArg(AsCodecOptions, args[2]);
        if (converted == NULL) {
            return NULL;
        }
    }
    PyObject *result = encode_with(document, args[1], converted ? converted : args[2]);
    Py_XDECREF(converted);
    return result;
}

/* encode() once the options are asyncmongo's. */
static PyObject *encode_with(PyObject *document, PyObject *check_keys_arg, PyObject *opts) {
    Ctx ctx = {opts};
    int is_dict = PyDict_CheckExact(document);
    if (!is_dict) {
        int is_raw = Py_TYPE(document) == RawType ||
                     call_predicate(IsRawDocumentClass, (PyObject *)Py_TYPE(document));
        if (is_raw) {
            return is_raw < 0 ? NULL : PyObject_GetAttr(document, StrRaw);
        }
        int is_mapping = PyObject_IsInstance(document, Mapping);
        if (is_mapping <= 0) {
            PyObject *name = is_mapping == 0 ? PyType_GetName(Py_TYPE(document)) : NULL;
            if (name != NULL) {
                PyErr_Format(PyExc_TypeError, "encode() takes a mapping, not %U", name);
                Py_DECREF(name);
            }
            return NULL;
        }
    }
    int check_keys = PyObject_IsTrue(check_keys_arg);
    if (check_keys < 0 || (check_keys && check_top_level_keys(document) < 0)) {
        return NULL;
    }
    Buffer b;
    buffer_init(&b);
    int rc = is_dict ? write_dict(&b, document, &ctx, 0) : write_mapping(&b, document, &ctx, 0);
    PyObject *result = NULL;
    if (rc < 0) {
        translate_error();
    } else {
        result = PyBytes_FromStringAndSize(b.data, b.len);
    }
    buffer_free(&b);
    return result;
}

/* ObjectId's clock: whole seconds since the epoch, as int(datetime.now(UTC).timestamp())
   (the pure fallback in objectid.py) reads them, without building a datetime each time. */
static PyObject *
seconds(PyObject *self, PyObject *unused)
{
    return PyLong_FromLongLong((long long)time(NULL));
}

static PyMethodDef methods[] = {
    {"encode", (PyCFunction)(void (*)(void))encode, METH_FASTCALL,
     "encode(document, check_keys, codec_options) -> bytes\n\n"
     "Encode a mapping as one BSON document, exactly as asyncmongo.bson.codec._py_encode."},
    {"seconds", seconds, METH_NOARGS,
     "seconds() -> int\n\nWhole seconds since the epoch: the clock of ObjectId generation."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "asyncmongo.bson._cencode",
    "The compiled BSON encoder (asyncmongo/bson/_encode.py is the reference).", -1, methods,
};

/* -- module init: look everything up once -- */

static PyObject *attr(PyObject *module, const char *name) {
    return PyObject_GetAttrString(module, name);
}

static int type_attr(PyObject *module, const char *name, PyTypeObject **out) {
    PyObject *t = attr(module, name);
    if (t == NULL) {
        return -1;
    }
    if (!PyType_Check(t)) {
        Py_DECREF(t);
        PyErr_Format(PyExc_ImportError, "asyncmongo.bson._cencode: %s is not a type", name);
        return -1;
    }
    *out = (PyTypeObject *)t;
    return 0;
}

static int intern(PyObject **out, const char *s) {
    *out = PyUnicode_InternFromString(s);
    return *out == NULL ? -1 : 0;
}

static int load_strings(void) {
    if (intern(&EmptyStr, "") < 0 || intern(&StrItems, "items") < 0 ||
        intern(&StrRaw, "raw") < 0 || intern(&StrBinaryAttr, "_binary") < 0 ||
        intern(&StrSubtype, "_subtype") < 0 || intern(&StrBits, "_bits") < 0 ||
        intern(&StrInc, "inc") < 0 || intern(&StrTime, "time") < 0 ||
        intern(&StrUtcoffset, "utcoffset") < 0 || intern(&StrStartswith, "startswith") < 0 ||
        intern(&StrDollar, "$") < 0 || intern(&StrDot, ".") < 0 ||
        intern(&StrScope, "scope") < 0 || intern(&StrPattern, "pattern") < 0 ||
        intern(&StrFlags, "flags") < 0 || intern(&StrInt, "int") < 0 ||
        intern(&StrUuidRepresentation, "uuid_representation") < 0 ||
        intern(&StrTypeRegistry, "type_registry") < 0 ||
        intern(&StrFallbackEncoder, "_fallback_encoder") < 0) {
        return -1;
    }
    return 0;
}

static int load_reference(PyObject *enc) {
    if ((Encoders = attr(enc, "_ENCODERS")) == NULL ||
        (FallbackEncoder = attr(enc, "_fallback_encoder")) == NULL ||
        (TypedKey = attr(enc, "_typed_key")) == NULL ||
        (EncDocument = attr(enc, "_enc_document")) == NULL ||
        (EncArray = attr(enc, "_enc_array")) == NULL || (EncRaw = attr(enc, "_enc_raw")) == NULL ||
        (EncBinary = attr(enc, "_enc_binary")) == NULL ||
        (EncDecimal128 = attr(enc, "_enc_decimal128")) == NULL ||
        (EncTimestamp = attr(enc, "_enc_timestamp")) == NULL ||
        (EncMinKey = attr(enc, "_enc_min_key")) == NULL ||
        (EncMaxKey = attr(enc, "_enc_max_key")) == NULL ||
        (EncUndefined = attr(enc, "_enc_undefined")) == NULL ||
        (EncCode = attr(enc, "_enc_code")) == NULL || (EncRegex = attr(enc, "_enc_regex")) == NULL ||
        (EncSymbol = attr(enc, "_enc_symbol")) == NULL ||
        (EncDatetimeMS = attr(enc, "_enc_datetime_ms")) == NULL ||
        (EncUuid = attr(enc, "_enc_uuid")) == NULL ||
        (EncInt64 = attr(enc, "_enc_int64")) == NULL) {
        return -1;
    }
    if (!PyDict_CheckExact(Encoders)) {
        PyErr_SetString(PyExc_ImportError, "asyncmongo.bson._cencode: _ENCODERS is not a dict");
        return -1;
    }
    for (int i = 0; i < K_COUNT; i++) {
        KeyCaches[i] = attr(enc, KEY_CACHE_NAMES[i]);
        if (KeyCaches[i] == NULL) {
            return -1;
        }
        if (!PyDict_CheckExact(KeyCaches[i])) {
            PyErr_Format(PyExc_ImportError, "asyncmongo.bson._cencode: %s is not a dict",
                         KEY_CACHE_NAMES[i]);
            return -1;
        }
        KeyTypeBytes[i] = PyBytes_FromStringAndSize(&KEY_TYPE_BYTES[i], 1);
        if (KeyTypeBytes[i] == NULL) {
            return -1;
        }
    }
    PyObject *depth = attr(enc, "MAX_NESTING_DEPTH");
    if (depth == NULL) {
        return -1;
    }
    MaxNestingDepth = PyLong_AsLong(depth);
    Py_DECREF(depth);
    if (MaxNestingDepth == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (type_attr(enc, "ObjectId", &ObjectIdType) < 0 || type_attr(enc, "Int64", &Int64Type) < 0 ||
        type_attr(enc, "Binary", &BinaryType) < 0 ||
        type_attr(enc, "Decimal128", &Decimal128Type) < 0 ||
        type_attr(enc, "Timestamp", &TimestampType) < 0 ||
        type_attr(enc, "RawBSONDocument", &RawType) < 0 || type_attr(enc, "Code", &CodeType) < 0 ||
        type_attr(enc, "Regex", &RegexType) < 0 || type_attr(enc, "Symbol", &SymbolType) < 0 ||
        type_attr(enc, "DatetimeMS", &DatetimeMSType) < 0) {
        return -1;
    }
    PyObject *uuid_module = attr(enc, "uuid");
    PyObject *reps = attr(enc, "UuidRepresentation");
    int rc = -1;
    if (uuid_module != NULL && reps != NULL && type_attr(uuid_module, "UUID", &UUIDType) == 0 &&
        (UuidStandard = attr(reps, "STANDARD")) != NULL &&
        (UuidPythonLegacy = attr(reps, "PYTHON_LEGACY")) != NULL) {
        rc = 0;
    }
    Py_XDECREF(uuid_module);
    Py_XDECREF(reps);
    return rc;
}

static int load_unpack_pair(void) {
    PyObject *globals = PyDict_New();
    if (globals == NULL) {
        return -1;
    }
    PyObject *result = NULL;
    if (PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) == 0) {
        result = PyRun_String("def unpack_pair(item):\n"
                              "    key, value = item\n"
                              "    return (key, value)\n",
                              Py_file_input, globals, globals);
    }
    if (result != NULL) {
        UnpackPair = PyDict_GetItemString(globals, "unpack_pair");
        Py_XINCREF(UnpackPair);
        Py_DECREF(result);
    }
    Py_DECREF(globals);
    return UnpackPair == NULL ? -1 : 0;
}

static int load_modules(void) {
    PyObject *abc = PyImport_ImportModule("collections.abc");
    if (abc == NULL) {
        return -1;
    }
    Mapping = attr(abc, "Mapping");
    Py_DECREF(abc);
    PyObject *structmod = PyImport_ImportModule("struct");
    if (Mapping == NULL || structmod == NULL) {
        Py_XDECREF(structmod);
        return -1;
    }
    StructError = attr(structmod, "error");
    Py_DECREF(structmod);
    PyObject *errors = PyImport_ImportModule("asyncmongo.bson.errors");
    if (StructError == NULL || errors == NULL) {
        Py_XDECREF(errors);
        return -1;
    }
    InvalidDocument = attr(errors, "InvalidDocument");
    InvalidStringData = attr(errors, "InvalidStringData");
    Py_DECREF(errors);
    if (InvalidDocument == NULL || InvalidStringData == NULL) {
        return -1;
    }
    PyObject *options = PyImport_ImportModule("asyncmongo.bson.codec_options");
    if (options == NULL) {
        return -1;
    }
    IsRawDocumentClass = attr(options, "is_raw_document_class");
    AsCodecOptions = attr(options, "as_codec_options");
    CodecOptionsType = attr(options, "CodecOptions");
    Py_DECREF(options);
    if (IsRawDocumentClass == NULL || AsCodecOptions == NULL || CodecOptionsType == NULL) {
        return -1;
    }
    ListOrTuple = PyTuple_Pack(2, (PyObject *)&PyList_Type, (PyObject *)&PyTuple_Type);
    PyObject *enc = PyImport_ImportModule("asyncmongo.bson._encode");
    if (ListOrTuple == NULL || enc == NULL) {
        Py_XDECREF(enc);
        return -1;
    }
    int rc = load_reference(enc);
    Py_DECREF(enc);
    return rc;
}

PyMODINIT_FUNC PyInit__cencode(void) {
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL || load_strings() < 0 || load_unpack_pair() < 0 ||
        load_modules() < 0) {
        return NULL;
    }
    return PyModule_Create(&module_def);
}
