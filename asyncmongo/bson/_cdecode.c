/*
 * asyncmongo.bson._cdecode: the compiled BSON decoder, beside the pure one (_decode.py).
 *
 * The pure decoder is the reference. This module must be observably identical to it for
 * every input: the same values of the same Python types, the same verdicts (InvalidBSON for
 * bad bytes, TypeError for input that is not bytes-like, the same nesting bound). To keep
 * that true by construction it decodes natively only the common element types under the
 * common options, and hands everything else to the pure code:
 *
 * - natively: double, string, document (dict), array (list), binary subtype 0 (bytes),
 *   ObjectId, bool, UTC datetime (naive or aware UTC, in range), null, int32, int64 (Int64),
 *   timestamp, decimal128, undefined, min/max key;
 * - per element, through the pure readers of _decode._RARE: binary of other subtypes (UUIDs),
 *   regex, DBPointer, code, symbol, code with scope; datetimes for DATETIME_MS, a tzinfo or
 *   out of range (_decode._datetime_from_ms); DBRef-shaped documents (_dbref_or_document);
 * - per call, _decode.decode_document_at: a document_class other than dict (RawBSONDocument,
 *   OrderedDict, ...), options that are not exactly a CodecOptions, data that is not exactly
 *   bytes or a position that is not a plain non-negative int in decode_document_at.
 *
 * CodecOptions.value_classes (a table of foreign classes, PyMongo's for the compatible
 * client): ObjectId and Int64 are built natively from the table's classes, Timestamp and
 * Decimal128 too when the table names their slots, MinKey/MaxKey/undefined are its values;
 * every other type goes to the pure readers, which consult the table. A table this module
 * cannot build from (no slot descriptor, a custom allocator) sends the call to the pure code.
 * CodecOptions.type_registry's decoders run per element after the value is built, through
 * _decode.apply_decoder; what they raise passes unchanged (unwrapped at the entry).
 *
 * Bounds follow the reference exactly: where the pure code reads through Python's bounds
 * (IndexError / struct.error, turned into InvalidBSON) this code checks against the whole
 * buffer; where it checks against the enclosing document's end, so does this. An element
 * that runs past its document's end is then caught, as in the pure code, by the rule that
 * the elements end exactly at the document's NUL.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <datetime.h>
#include <stdint.h>
#include <string.h>

/* -- what module init looks up once -------------------------------------------------------- */

static PyObject *InvalidBSON;          /* asyncmongo.bson.errors.InvalidBSON */
static PyObject *StructError;          /* struct.error */
static PyTypeObject *ObjectIdType;
static PyObject *ObjectIdBinary;       /* the ObjectId._binary slot descriptor */
static PyTypeObject *TimestampType;
static PyObject *TimestampTime;        /* slot descriptors of the frozen dataclass */
static PyObject *TimestampInc;
static PyTypeObject *Decimal128Type;
static PyObject *Decimal128Bits;
static PyTypeObject *Int64Type;
static PyObject *CodecOptionsType;
static PyObject *MinKeyValue;
static PyObject *MaxKeyValue;
static PyObject *UndefinedValue;
static PyObject *PyDecodeDocumentAt;   /* _decode.decode_document_at */
static PyObject *PyDbrefOrDocument;    /* _decode._dbref_or_document */
static PyObject *PyDatetimeFromMs;     /* _decode._datetime_from_ms */
static PyObject *PyApplyDecoder;       /* _decode.apply_decoder(decoder, value) */
static PyObject *UserCodeError;        /* _decode._UserCodeError, unwrapped at the entry */
static PyObject *RareReaders[256];     /* _decode._RARE by type byte, NULL when absent */
static long MaxNestingDepth;
static int Int64IsPlainInt;          /* Int64 adds nothing to int's layout */

static PyObject *str_ref;              /* "$ref" */
static PyObject *str_document_class;
static PyObject *str_tz_aware;
static PyObject *str_tzinfo;
static PyObject *str_datetime_conversion;
static PyObject *str_unicode_decode_error_handler;
static PyObject *str_type_registry;
static PyObject *str_decoder_map;
static PyObject *str_value_classes;
static PyObject *str_object_id;
static PyObject *str_object_id_slot;
static PyObject *str_int64;
static PyObject *str_timestamp, *str_timestamp_slots, *str_decimal128, *str_decimal128_slots;
static PyObject *str_min_key, *str_max_key, *str_undefined;
static PyObject *str_error;

/* DatetimeConversion values (asyncmongo.bson.types). */
#define DATETIME_MS 3

/* -- one decode call ------------------------------------------------------------------------ */

enum dt_mode { DT_PURE, DT_NAIVE, DT_AWARE_UTC };

/* The classes values are built of: asyncmongo's, or those of CodecOptions.value_classes
 * (then `foreign` is set and the types without a native builder go to the pure readers). */
typedef struct {
    int foreign;
    PyTypeObject *oid_type;       /* borrowed: the options keep them alive */
    PyObject *oid_slot;           /* the slot descriptor holding the 12 bytes */
    PyTypeObject *int64_type;
    int int64_plain;              /* int64_type adds nothing to int's layout */
    PyTypeObject *ts_type;        /* NULL: timestamps go to the pure reader */
    PyObject *ts_time, *ts_inc;   /* slot descriptors */
    PyTypeObject *dec_type;       /* NULL: decimal128 goes to the pure reader */
    PyObject *dec_high, *dec_low;
    PyObject *min_key, *max_key, *undefined;
} Classes;

typedef struct {
    PyObject *data;               /* the bytes object (the pure readers take it) */
    const unsigned char *buf;
    Py_ssize_t len;
    PyObject *opts;
    const char *errors;           /* the unicode_decode_error_handler; NULL for "strict" */
    enum dt_mode dt_mode;
    PyObject *decoders;           /* type_registry._decoder_map when not empty, else NULL */
    const Classes *classes;
} Ctx;

/* The options this module decodes natively, or 0 when the call goes to the pure code. */
typedef struct {
    int native;
    const char *errors;
    enum dt_mode dt_mode;
    PyObject *decoders;
    Classes classes;
} Opts;

static inline int32_t read_i32(const unsigned char *p)
{
    return (int32_t)((uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
                     ((uint32_t)p[3] << 24));
}

static inline uint32_t read_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline uint64_t read_u64(const unsigned char *p)
{
    return (uint64_t)read_u32(p) | ((uint64_t)read_u32(p + 4) << 32);
}

static PyObject *bad(const char *message)
{
    PyErr_SetString(InvalidBSON, message);
    return NULL;
}

/* -- keys: a small cache of recently decoded ASCII keys ------------------------------------ */

/* Field names repeat (every document of a reply has the same ones), so a decoded ASCII key
 * is kept by a hash of its bytes and handed out again: no decode, no allocation, and its str
 * hash is already computed for the dict. ASCII decodes the same under every error handler,
 * so the cache holds for every option. */
#define KEY_CACHE_BITS 10
#define KEY_CACHE_SIZE (1 << KEY_CACHE_BITS)
#define KEY_CACHE_MAX_LEN 48

static PyObject *key_cache[KEY_CACHE_SIZE];

/* The element name at buf[*pos + 1:] (NUL-terminated before `end`) as a str; *pos moves to
 * the byte after its NUL. One pass finds the NUL, hashes the bytes and tells ASCII. */
static PyObject *read_key(Ctx *ctx, Py_ssize_t *pos, Py_ssize_t end)
{
    const unsigned char *s = ctx->buf + *pos + 1;
    const unsigned char *limit = ctx->buf + end;
    const unsigned char *scan_limit = limit - s > KEY_CACHE_MAX_LEN ? s + KEY_CACHE_MAX_LEN : limit;
    const unsigned char *q = s;
    uint32_t h = 0;
    unsigned char high = 0;
    while (q < scan_limit && *q) {
        high |= *q;
        h = ((h << 5) | (h >> 27)) ^ *q;
        q++;
    }
    if (q < scan_limit && !(high & 0x80)) {
        /* A short ASCII key: from the cache, or decoded into it. */
        Py_ssize_t n = q - s;
        *pos = q - ctx->buf + 1;
        h = (h ^ (uint32_t)n) * 2654435761u;
        PyObject **slot = &key_cache[h >> (32 - KEY_CACHE_BITS)];
        PyObject *cached = *slot;
        if (cached != NULL && PyUnicode_GET_LENGTH(cached) == n) {
            const unsigned char *c = PyUnicode_1BYTE_DATA(cached);
            Py_ssize_t i = 0;
            while (i < n && c[i] == s[i])
                i++;
            if (i == n) {
                Py_INCREF(cached);
                return cached;
            }
        }
        PyObject *key = PyUnicode_New(n, 127);
        if (key == NULL)
            return NULL;
        memcpy(PyUnicode_1BYTE_DATA(key), s, (size_t)n);
        PyObject *old = *slot;
        Py_INCREF(key);
        *slot = key;
        Py_XDECREF(old);
        return key;
    }
    if (q == scan_limit) {
        q = q < limit ? memchr(q, 0, (size_t)(limit - q)) : NULL;
        if (q == NULL) {
            PyErr_SetString(InvalidBSON, "element name is not NUL-terminated inside the document");
            return NULL;
        }
    }
    *pos = q - ctx->buf + 1;
    return PyUnicode_DecodeUTF8((const char *)s, q - s, ctx->errors);
}

/* -- values built without the classes' parsing constructors -------------------------------- */

static int set_slot(PyObject *obj, PyObject *descr, PyObject *value)
{
    descrsetfunc set = Py_TYPE(descr)->tp_descr_set;
    int rc = set(descr, obj, value);
    Py_DECREF(value);
    return rc;
}

static PyObject *new_object_id(const Classes *classes, const unsigned char *p)
{
    PyTypeObject *type = classes->foreign ? classes->oid_type : ObjectIdType;
    PyObject *raw = PyBytes_FromStringAndSize((const char *)p, 12);
    if (raw == NULL)
        return NULL;
    PyObject *oid = type->tp_alloc(type, 0);
    if (oid == NULL) {
        Py_DECREF(raw);
        return NULL;
    }
    if (set_slot(oid, classes->foreign ? classes->oid_slot : ObjectIdBinary, raw) < 0) {
        Py_DECREF(oid);
        return NULL;
    }
    return oid;
}

static PyObject *new_timestamp(const Classes *classes, uint32_t time, uint32_t inc)
{
    PyTypeObject *type = classes->foreign ? classes->ts_type : TimestampType;
    PyObject *ts = type->tp_alloc(type, 0);
    if (ts == NULL)
        return NULL;
    PyObject *t = PyLong_FromUnsignedLong(time);
    if (t == NULL || set_slot(ts, classes->foreign ? classes->ts_time : TimestampTime, t) < 0)
        goto fail;
    PyObject *i = PyLong_FromUnsignedLong(inc);
    if (i == NULL || set_slot(ts, classes->foreign ? classes->ts_inc : TimestampInc, i) < 0)
        goto fail;
    return ts;
fail:
    Py_DECREF(ts);
    return NULL;
}

/* A foreign Decimal128 keeps the high and low 64 bits of the BID encoding in two slots. */
static PyObject *new_foreign_decimal128(const Classes *classes, const unsigned char *p)
{
    PyTypeObject *type = classes->dec_type;
    PyObject *dec = type->tp_alloc(type, 0);
    if (dec == NULL)
        return NULL;
    PyObject *high = PyLong_FromUnsignedLongLong(read_u64(p + 8));
    if (high == NULL || set_slot(dec, classes->dec_high, high) < 0)
        goto fail;
    PyObject *low = PyLong_FromUnsignedLongLong(read_u64(p));
    if (low == NULL || set_slot(dec, classes->dec_low, low) < 0)
        goto fail;
    return dec;
fail:
    Py_DECREF(dec);
    return NULL;
}

static PyObject *new_decimal128(const unsigned char *p)
{
    /* int.from_bytes(p, "little") */
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *bits = PyLong_FromUnsignedNativeBytes(
        p, 16, Py_ASNATIVEBYTES_LITTLE_ENDIAN | Py_ASNATIVEBYTES_UNSIGNED_BUFFER);
#else
    PyObject *bits = _PyLong_FromByteArray(p, 16, 1, 0);
#endif
    if (bits == NULL)
        return NULL;
    PyObject *dec = Decimal128Type->tp_alloc(Decimal128Type, 0);
    if (dec == NULL) {
        Py_DECREF(bits);
        return NULL;
    }
    if (set_slot(dec, Decimal128Bits, bits) < 0) {
        Py_DECREF(dec);
        return NULL;
    }
    return dec;
}

static PyObject *new_int64(const Classes *classes, int64_t value)
{
    PyTypeObject *type = classes->foreign ? classes->int64_type : Int64Type;
    int plain = classes->foreign ? classes->int64_plain : Int64IsPlainInt;
    PyObject *n = PyLong_FromLongLong(value);
    if (n == NULL)
        return NULL;
#if PY_VERSION_HEX < 0x030C0000
    if (!plain) {
        PyObject *called = PyObject_CallOneArg((PyObject *)type, n);
        Py_DECREF(n);
        return called;
    }
    /* What int.__new__(Int64, n) does (long_subtype_new), without its argument tuple and
     * call overhead: the digits of n copied into an Int64 of the same size. */
    PyLongObject *src = (PyLongObject *)n;
    Py_ssize_t size = Py_SIZE(src);
    Py_ssize_t ndigits = size < 0 ? -size : size;
    PyLongObject *result = (PyLongObject *)type->tp_alloc(type, ndigits);
    if (result != NULL) {
        Py_SET_SIZE(result, size);
        memcpy(result->ob_digit, src->ob_digit, (size_t)ndigits * sizeof(digit));
    }
#else
    (void)plain;
    PyObject *result = PyObject_CallOneArg((PyObject *)type, n);
#endif
    Py_DECREF(n);
    /* An Int64 holds no references (int payload, empty __slots__), so it can never be part
     * of a cycle; untracked, the thousands a large reply holds no longer make every young
     * collection walk the document being built. */
    if (result != NULL && PyObject_GC_IsTracked((PyObject *)result))
        PyObject_GC_UnTrack(result);
    return (PyObject *)result;
}

/* A BSON datetime: natively when the options allow it and Python's datetime can hold it
 * (years 1..9999), else through _decode._datetime_from_ms, which decides (DatetimeMS,
 * clamping, InvalidBSON) exactly as the reference. */
static PyObject *new_datetime(Ctx *ctx, int64_t ms)
{
    if (ctx->dt_mode != DT_PURE) {
        int64_t days = ms / 86400000;
        int64_t rem = ms % 86400000;
        if (rem < 0) {
            rem += 86400000;
            days -= 1;
        }
        if (days >= -719162 && days <= 2932896) {
            /* civil_from_days (H. Hinnant), days since 1970-01-01 to a proleptic date. */
            int64_t z = days + 719468;
            int64_t era = (z >= 0 ? z : z - 146096) / 146097;
            int64_t doe = z - era * 146097;
            int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
            int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
            int64_t mp = (5 * doy + 2) / 153;
            int day = (int)(doy - (153 * mp + 2) / 5 + 1);
            int month = (int)(mp < 10 ? mp + 3 : mp - 9);
            int year = (int)(yoe + era * 400 + (month <= 2));
            int msec = (int)rem;
            PyObject *tz = ctx->dt_mode == DT_AWARE_UTC ? PyDateTime_TimeZone_UTC : Py_None;
            return PyDateTimeAPI->DateTime_FromDateAndTime(
                year, month, day, msec / 3600000, msec / 60000 % 60, msec / 1000 % 60,
                msec % 1000 * 1000, tz, PyDateTimeAPI->DateTimeType);
        }
    }
    PyObject *n = PyLong_FromLongLong(ms);
    if (n == NULL)
        return NULL;
    PyObject *args[2] = {n, ctx->opts};
    PyObject *result = PyObject_Vectorcall(PyDatetimeFromMs, args, 2, NULL);
    Py_DECREF(n);
    return result;
}

/* -- the element loops ---------------------------------------------------------------------- */

static PyObject *decode_document(Ctx *ctx, Py_ssize_t pos, Py_ssize_t end, long depth);
static PyObject *decode_array(Ctx *ctx, Py_ssize_t pos, Py_ssize_t end, long depth);

/* A rare type through its pure reader: reader(data, pos, end, opts, depth) -> (value, pos). */
static PyObject *read_rare(Ctx *ctx, PyObject *reader, Py_ssize_t *pos, Py_ssize_t end,
                           long depth)
{
    PyObject *args[5] = {ctx->data, PyLong_FromSsize_t(*pos), PyLong_FromSsize_t(end),
                         ctx->opts, PyLong_FromLong(depth)};
    PyObject *result = NULL;
    PyObject *value = NULL;
    if (args[1] != NULL && args[2] != NULL && args[4] != NULL)
        result = PyObject_Vectorcall(reader, args, 5, NULL);
    Py_XDECREF(args[1]);
    Py_XDECREF(args[2]);
    Py_XDECREF(args[4]);
    if (result == NULL)
        return NULL;
    if (PyTuple_CheckExact(result) && PyTuple_GET_SIZE(result) == 2) {
        Py_ssize_t next = PyLong_AsSsize_t(PyTuple_GET_ITEM(result, 1));
        if (!(next == -1 && PyErr_Occurred())) {
            value = PyTuple_GET_ITEM(result, 0);
            Py_INCREF(value);
            *pos = next;
        }
    } else {
        PyErr_SetString(PyExc_SystemError, "a pure BSON reader returned no (value, pos) pair");
    }
    Py_DECREF(result);
    return value;
}

/* An embedded document or array (type 0x03 / 0x04) starting at *pos. */
static PyObject *read_container(Ctx *ctx, int is_array, Py_ssize_t *pos, long depth)
{
    Py_ssize_t p = *pos;
    if (p + 4 > ctx->len)
        return bad(is_array ? "truncated array length" : "truncated document length");
    int32_t n = read_i32(ctx->buf + p);
    Py_ssize_t stop = p + n - 1;
    if (n < 5 || stop >= ctx->len || ctx->buf[stop])
        return bad(is_array ? "invalid length or terminator for an array"
                            : "invalid length or terminator for a document");
    *pos = stop + 1;
    if (is_array)
        return decode_array(ctx, p + 4, stop, depth + 1);
    PyObject *sub = decode_document(ctx, p + 4, stop, depth + 1);
    if (sub == NULL)
        return NULL;
    /* specs/dbref: a document with $ref may be a DBRef (decided by the reference code). */
    int has_ref = PyDict_Contains(sub, str_ref);
    if (has_ref == 0)
        return sub;
    PyObject *args[2] = {sub, ctx->opts};
    PyObject *result = has_ref < 0 ? NULL : PyObject_Vectorcall(PyDbrefOrDocument, args, 2, NULL);
    Py_DECREF(sub);
    return result;
}

/* The value of type t at *pos (after its key), advancing *pos. */
static inline PyObject *read_value(Ctx *ctx, unsigned char t, Py_ssize_t *pos, Py_ssize_t end,
                                   long depth)
{
    const unsigned char *buf = ctx->buf;
    Py_ssize_t len = ctx->len;
    Py_ssize_t p = *pos;
    switch (t) {
    case 0x02: { /* string */
        if (p + 4 > len)
            return bad("truncated string length");
        int32_t n = read_i32(buf + p);
        p += 4;
        if (n < 1 || p + n - 1 >= len || buf[p + n - 1])
            return bad("invalid string length or terminator");
        *pos = p + n;
        return PyUnicode_DecodeUTF8((const char *)buf + p, n - 1, ctx->errors);
    }
    case 0x10: /* int32 */
        if (p + 4 > len)
            return bad("truncated int32");
        *pos = p + 4;
        return PyLong_FromLong(read_i32(buf + p));
    case 0x01: { /* double */
        if (p + 8 > len)
            return bad("truncated double");
        uint64_t bits = read_u64(buf + p);
        double d;
        memcpy(&d, &bits, sizeof d);
        *pos = p + 8;
        return PyFloat_FromDouble(d);
    }
    case 0x08: { /* bool */
        if (p >= len)
            return bad("truncated boolean");
        unsigned char b = buf[p];
        if (b > 1) {
            PyErr_Format(InvalidBSON, "invalid boolean value %d", (int)b);
            return NULL;
        }
        *pos = p + 1;
        return Py_NewRef(b ? Py_True : Py_False);
    }
    case 0x12: /* int64 */
        if (p + 8 > len)
            return bad("truncated int64");
        *pos = p + 8;
        return new_int64(ctx->classes, (int64_t)read_u64(buf + p));
    case 0x03:
        return read_container(ctx, 0, pos, depth);
    case 0x04:
        return read_container(ctx, 1, pos, depth);
    case 0x09: /* UTC datetime */
        if (p + 8 > len)
            return bad("truncated datetime");
        *pos = p + 8;
        return new_datetime(ctx, (int64_t)read_u64(buf + p));
    case 0x07: /* ObjectId */
        if (p + 12 > len)
            return bad("truncated ObjectId");
        *pos = p + 12;
        return new_object_id(ctx->classes, buf + p);
    case 0x0A: /* null */
        return Py_NewRef(Py_None);
    case 0x05: /* binary: subtype 0 natively, the others (UUIDs, legacy) by the reference */
        if (p + 4 >= len)
            return bad("truncated binary");
        if (buf[p + 4] == 0) {
            int32_t n = read_i32(buf + p);
            p += 5;
            if (n < 0 || p + n > end)
                return bad("invalid binary length");
            *pos = p + n;
            return PyBytes_FromStringAndSize((const char *)buf + p, n);
        }
        break;
    case 0x11: /* timestamp: increment, then seconds */
        if (ctx->classes->foreign && ctx->classes->ts_type == NULL)
            break;
        if (p + 8 > len)
            return bad("truncated timestamp");
        *pos = p + 8;
        return new_timestamp(ctx->classes, read_u32(buf + p + 4), read_u32(buf + p));
    case 0x13: /* decimal128 */
        if (ctx->classes->foreign && ctx->classes->dec_type == NULL)
            break;
        if (p + 16 > end)
            return bad("truncated decimal128");
        *pos = p + 16;
        if (ctx->classes->foreign)
            return new_foreign_decimal128(ctx->classes, buf + p);
        return new_decimal128(buf + p);
    case 0x06:
        return Py_NewRef(ctx->classes->foreign ? ctx->classes->undefined : UndefinedValue);
    case 0xFF:
        return Py_NewRef(ctx->classes->foreign ? ctx->classes->min_key : MinKeyValue);
    case 0x7F:
        return Py_NewRef(ctx->classes->foreign ? ctx->classes->max_key : MaxKeyValue);
    default:
        break;
    }
    PyObject *reader = RareReaders[t];
    if (reader == NULL) {
        PyErr_Format(InvalidBSON, "unknown BSON type 0x%02x", (unsigned)t);
        return NULL;
    }
    return read_rare(ctx, reader, pos, end, depth);
}

/* Documents at least this long get a dict sized for their elements up front (through
 * _PyDict_NewPresized, checked to exist in CPython 3.11 to 3.13). */
#if PY_VERSION_HEX < 0x030E0000
#define PRESIZE_DICTS 1
#endif

#define PRESIZE_MIN_BYTES 512
#define PRESIZE_MAX (1 << 17)

/* How many elements buf[pos:end] holds, counted by skipping them; a hint only (it stops at
 * the first element it cannot size, the decoder proper judges the bytes). */
#ifdef PRESIZE_DICTS
static Py_ssize_t count_elements(const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end)
{
    Py_ssize_t count = 0;
    while (pos < end) {
        unsigned char t = buf[pos];
        const unsigned char *kend = memchr(buf + pos + 1, 0, (size_t)(end - pos - 1));
        if (kend == NULL)
            break;
        pos = kend - buf + 1;
        Py_ssize_t size;
        switch (t) {
        case 0x01: case 0x09: case 0x11: case 0x12: size = 8; break;
        case 0x10: size = 4; break;
        case 0x07: size = 12; break;
        case 0x08: size = 1; break;
        case 0x0A: case 0x06: case 0x7F: case 0xFF: size = 0; break;
        case 0x13: size = 16; break;
        case 0x02: case 0x0D: case 0x0E:
            if (pos + 4 > end)
                return count;
            size = 4 + (Py_ssize_t)read_i32(buf + pos);
            break;
        case 0x03: case 0x04: case 0x0F:
            if (pos + 4 > end)
                return count;
            size = read_i32(buf + pos);
            break;
        case 0x05:
            if (pos + 4 > end)
                return count;
            size = 5 + (Py_ssize_t)read_i32(buf + pos);
            break;
        default:
            return count;
        }
        if (size < 0)
            return count;
        pos += size;
        count++;
    }
    return count;
}
#endif

static PyObject *new_dict(Ctx *ctx, Py_ssize_t pos, Py_ssize_t end)
{
#ifdef PRESIZE_DICTS
    if (end - pos >= PRESIZE_MIN_BYTES) {
        /* Capped: duplicate keys could make the count far larger than the dict. */
        Py_ssize_t count = count_elements(ctx->buf, pos, end);
        return _PyDict_NewPresized(count < PRESIZE_MAX ? count : PRESIZE_MAX);
    }
#endif
    return PyDict_New();
}

/* The custom decoder of the value's exact type (TypeRegistry), if any; steals `value`. */
static PyObject *apply_decoder(Ctx *ctx, PyObject *value)
{
    PyObject *decoder = PyDict_GetItemWithError(ctx->decoders, (PyObject *)Py_TYPE(value));
    if (decoder == NULL) {
        if (PyErr_Occurred())
            Py_CLEAR(value);
        return value;
    }
    PyObject *args[2] = {decoder, value};
    PyObject *result = PyObject_Vectorcall(PyApplyDecoder, args, 2, NULL);
    Py_DECREF(value);
    return result;
}

static int check_depth(long depth)
{
    if (depth > MaxNestingDepth) {
        PyErr_Format(InvalidBSON, "document nested deeper than %ld levels", MaxNestingDepth);
        return -1;
    }
    return 0;
}

/* The elements in buf[pos:end] (end is the document's NUL) as a dict. */
static PyObject *decode_document(Ctx *ctx, Py_ssize_t pos, Py_ssize_t end, long depth)
{
    if (check_depth(depth) < 0)
        return NULL;
    const unsigned char *buf = ctx->buf;
    PyObject *doc = new_dict(ctx, pos, end);
    if (doc == NULL)
        return NULL;
    while (pos < end) {
        unsigned char t = buf[pos];
        PyObject *key = read_key(ctx, &pos, end);
        if (key == NULL)
            goto fail;
        PyObject *value = read_value(ctx, t, &pos, end, depth);
        if (value != NULL && ctx->decoders != NULL)
            value = apply_decoder(ctx, value);
        if (value == NULL) {
            Py_DECREF(key);
            goto fail;
        }
        int rc = PyDict_SetItem(doc, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (rc < 0)
            goto fail;
    }
    if (pos != end) {
        bad("document elements do not end where the document length says");
        goto fail;
    }
    return doc;
fail:
    Py_DECREF(doc);
    return NULL;
}

/* The elements in buf[pos:end] (end is the array's NUL) as a list; keys are skipped. */
static PyObject *decode_array(Ctx *ctx, Py_ssize_t pos, Py_ssize_t end, long depth)
{
    if (check_depth(depth) < 0)
        return NULL;
    const unsigned char *buf = ctx->buf;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    while (pos < end) {
        unsigned char t = buf[pos];
        /* Array keys ("0", "1", ...) are skipped, not decoded, as in the reference. */
        Py_ssize_t k = pos + 1;
        while (k < end && buf[k])
            k++;
        if (k == end) {
            bad("array index is not NUL-terminated inside the array");
            goto fail;
        }
        pos = k + 1;
        PyObject *value = read_value(ctx, t, &pos, end, depth);
        if (value != NULL && ctx->decoders != NULL)
            value = apply_decoder(ctx, value);
        if (value == NULL)
            goto fail;
        int rc = PyList_Append(out, value);
        Py_DECREF(value);
        if (rc < 0)
            goto fail;
    }
    if (pos != end) {
        bad("array elements do not end where the array length says");
        goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* -- errors from the reference's readers ---------------------------------------------------- */

/* The pure decode_document_at turns what its readers raise into InvalidBSON; the readers
 * called from here raise it raw, so the same translation happens at this module's entry. */
static void translate_error(void)
{
    if (PyErr_ExceptionMatches(UserCodeError)) {
        /* What a custom type decoder raised, passed on unchanged. */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        PyObject *error = value == NULL ? NULL : PyObject_GetAttr(value, str_error);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        if (error != NULL)
            PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(error)), error, NULL);
        return;
    }
    if (PyErr_ExceptionMatches(InvalidBSON))
        return;
    int recursion = PyErr_ExceptionMatches(PyExc_RecursionError);
    if (!recursion && !PyErr_ExceptionMatches(StructError) &&
        !PyErr_ExceptionMatches(PyExc_ValueError) && !PyErr_ExceptionMatches(PyExc_IndexError) &&
        !PyErr_ExceptionMatches(PyExc_OverflowError))
        return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *message = recursion
        ? PyUnicode_FromString("BSON nested too deeply for the Python stack")
        : PyUnicode_FromFormat("invalid BSON: %S", value);
    PyObject *exc = message == NULL ? NULL : PyObject_CallOneArg(InvalidBSON, message);
    Py_XDECREF(message);
    if (exc == NULL) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return;
    }
    PyException_SetCause(exc, NULL); /* raise ... from None */
    if (value != NULL)
        PyException_SetContext(exc, value); /* steals value */
    Py_XDECREF(type);
    Py_XDECREF(tb);
    PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), exc, NULL);
}

/* -- options -------------------------------------------------------------------------------- */

static int read_options_uncached(PyObject *opts, Opts *out);

/* type_registry._decoder_map, when not empty (borrowed: the frozen options keep the
 * registry, the registry its map). 0, or -1 with an error. */
static int read_decoders(PyObject *opts, Opts *out)
{
    out->decoders = NULL;
    PyObject *registry = PyObject_GetAttr(opts, str_type_registry);
    if (registry == NULL)
        return -1;
    PyObject *map = PyObject_GetAttr(registry, str_decoder_map);
    Py_DECREF(registry);
    if (map == NULL)
        return -1;
    Py_DECREF(map);
    if (!PyDict_Check(map))
        return 1;
    if (PyDict_GET_SIZE(map) > 0)
        out->decoders = map;
    return 0;
}

/* A class of the value-class table built through two slots (ValueClasses.<name>_slots):
 * its type and slot descriptors, or *type = NULL when not so built. 0, or -1 with an error. */
static int read_slot_built(PyObject *vc, PyObject *name, PyObject *slots_name,
                           PyTypeObject **type, PyObject **first, PyObject **second)
{
    *type = NULL;
    PyObject *cls = PyObject_GetAttr(vc, name);
    if (cls == NULL)
        return -1;
    Py_DECREF(cls); /* the frozen table keeps it alive */
    PyObject *slots = PyObject_GetAttr(vc, slots_name);
    if (slots == NULL)
        return -1;
    Py_DECREF(slots);
    if (!PyType_Check(cls) || !PyTuple_CheckExact(slots) || PyTuple_GET_SIZE(slots) != 2 ||
        ((PyTypeObject *)cls)->tp_alloc != PyType_GenericAlloc)
        return 0;
    PyObject *a = PyTuple_GET_ITEM(slots, 0), *b = PyTuple_GET_ITEM(slots, 1);
    if (!PyUnicode_Check(a) || !PyUnicode_Check(b))
        return 0;
    PyObject *da = _PyType_Lookup((PyTypeObject *)cls, a);
    PyObject *db = _PyType_Lookup((PyTypeObject *)cls, b);
    if (da == NULL || db == NULL || Py_TYPE(da)->tp_descr_set == NULL ||
        Py_TYPE(db)->tp_descr_set == NULL)
        return 0;
    *type = (PyTypeObject *)cls;
    *first = da;
    *second = db;
    return 0;
}

/* CodecOptions.value_classes: 0 when natively built (none, or classes this module can
 * build), 1 when the call goes to the pure code, -1 with an error. */
static int read_classes(PyObject *opts, Opts *out)
{
    memset(&out->classes, 0, sizeof out->classes);
    PyObject *vc = PyObject_GetAttr(opts, str_value_classes);
    if (vc == NULL)
        return -1;
    Py_DECREF(vc); /* the frozen options keep it alive */
    if (vc == Py_None)
        return 0;
    PyObject *oid_type = PyObject_GetAttr(vc, str_object_id);
    PyObject *slot_name = oid_type == NULL ? NULL : PyObject_GetAttr(vc, str_object_id_slot);
    PyObject *int64_type = slot_name == NULL ? NULL : PyObject_GetAttr(vc, str_int64);
    Py_XDECREF(oid_type);
    Py_XDECREF(slot_name);
    Py_XDECREF(int64_type);
    if (int64_type == NULL)
        return -1;
    if (!PyType_Check(oid_type) || !PyUnicode_Check(slot_name) || !PyType_Check(int64_type))
        return 1;
    PyTypeObject *it = (PyTypeObject *)int64_type;
    PyObject *slot = _PyType_Lookup((PyTypeObject *)oid_type, slot_name);
    if (slot == NULL || Py_TYPE(slot)->tp_descr_set == NULL ||
        ((PyTypeObject *)oid_type)->tp_alloc != PyType_GenericAlloc ||
        !PyType_IsSubtype(it, &PyLong_Type))
        return 1;
    if (read_slot_built(vc, str_timestamp, str_timestamp_slots, &out->classes.ts_type,
                        &out->classes.ts_time, &out->classes.ts_inc) < 0 ||
        read_slot_built(vc, str_decimal128, str_decimal128_slots, &out->classes.dec_type,
                        &out->classes.dec_high, &out->classes.dec_low) < 0)
        return -1;
    PyObject **values[3] = {&out->classes.min_key, &out->classes.max_key,
                            &out->classes.undefined};
    PyObject *names[3] = {str_min_key, str_max_key, str_undefined};
    for (int i = 0; i < 3; i++) {
        PyObject *value = PyObject_GetAttr(vc, names[i]);
        if (value == NULL)
            return -1;
        Py_DECREF(value); /* the frozen table keeps it alive */
        *values[i] = value;
    }
    out->classes.foreign = 1;
    out->classes.oid_type = (PyTypeObject *)oid_type;
    out->classes.oid_slot = slot;
    out->classes.int64_type = it;
    out->classes.int64_plain = it->tp_basicsize == PyLong_Type.tp_basicsize &&
                               it->tp_itemsize == PyLong_Type.tp_itemsize &&
                               it->tp_alloc == PyType_GenericAlloc;
    return 0;
}

/* The options of the last call, kept by identity: CodecOptions is frozen, and most calls
 * pass the same instance (DEFAULT_CODEC_OPTIONS, a collection's options). */
static PyObject *last_opts;
static Opts last_read;

static int read_options(PyObject *opts, Opts *out)
{
    if (opts == last_opts) {
        *out = last_read;
        return 0;
    }
    if (read_options_uncached(opts, out) < 0)
        return -1;
    if ((PyObject *)Py_TYPE(opts) == CodecOptionsType) {
        /* The pair is replaced before the old options are released: releasing them may run
         * Python code that decodes again. */
        PyObject *old = last_opts;
        last_read = *out;
        last_opts = Py_NewRef(opts);
        Py_XDECREF(old);
    }
    return 0;
}

static int read_options_uncached(PyObject *opts, Opts *out)
{
    out->native = 0;
    if ((PyObject *)Py_TYPE(opts) != CodecOptionsType)
        return 0;
    PyObject *doc_class = PyObject_GetAttr(opts, str_document_class);
    if (doc_class == NULL)
        return -1;
    Py_DECREF(doc_class); /* compared by identity only; the options keep it alive */
    if (doc_class != (PyObject *)&PyDict_Type)
        return 0;
    PyObject *handler = PyObject_GetAttr(opts, str_unicode_decode_error_handler);
    if (handler == NULL)
        return -1;
    Py_DECREF(handler); /* the frozen options keep it alive for the call */
    if (!PyUnicode_Check(handler))
        return 0;
    Py_ssize_t size;
    const char *errors = PyUnicode_AsUTF8AndSize(handler, &size);
    if (errors == NULL)
        return -1;
    if ((Py_ssize_t)strlen(errors) != size)
        return 0;
    out->errors = strcmp(errors, "strict") == 0 ? NULL : errors;

    PyObject *conversion = PyObject_GetAttr(opts, str_datetime_conversion);
    if (conversion == NULL)
        return -1;
    long conv = PyLong_AsLong(conversion);
    Py_DECREF(conversion);
    if (conv == -1 && PyErr_Occurred())
        return -1;
    PyObject *tz_aware = PyObject_GetAttr(opts, str_tz_aware);
    if (tz_aware == NULL)
        return -1;
    int aware = PyObject_IsTrue(tz_aware);
    Py_DECREF(tz_aware);
    if (aware < 0)
        return -1;
    PyObject *tzinfo = PyObject_GetAttr(opts, str_tzinfo);
    if (tzinfo == NULL)
        return -1;
    int has_tzinfo = tzinfo != Py_None;
    Py_DECREF(tzinfo);
    if (conv == DATETIME_MS || has_tzinfo)
        out->dt_mode = DT_PURE;
    else
        out->dt_mode = aware ? DT_AWARE_UTC : DT_NAIVE;
    int rc = read_decoders(opts, out);
    if (rc == 0)
        rc = read_classes(opts, out);
    if (rc < 0)
        return -1;
    out->native = rc == 0;
    return 0;
}

/* -- entry points --------------------------------------------------------------------------- */

/* The top-level document of `data` (exactly bytes) at pos >= 0: (document, end). */
static PyObject *decode_at(PyObject *data, Py_ssize_t pos, PyObject *opts, const Opts *o,
                           Py_ssize_t *stop_out)
{
    if (!o->native) {
        PyObject *n = PyLong_FromSsize_t(pos);
        if (n == NULL)
            return NULL;
        PyObject *args[3] = {data, n, opts};
        PyObject *result = PyObject_Vectorcall(PyDecodeDocumentAt, args, 3, NULL);
        Py_DECREF(n);
        if (result == NULL)
            return NULL;
        PyObject *doc = NULL;
        if (PyTuple_CheckExact(result) && PyTuple_GET_SIZE(result) == 2) {
            Py_ssize_t stop = PyLong_AsSsize_t(PyTuple_GET_ITEM(result, 1));
            if (!(stop == -1 && PyErr_Occurred())) {
                doc = Py_NewRef(PyTuple_GET_ITEM(result, 0));
                *stop_out = stop;
            }
        } else {
            PyErr_SetString(PyExc_SystemError, "decode_document_at returned no pair");
        }
        Py_DECREF(result);
        return doc;
    }
    Ctx ctx = {data, (const unsigned char *)PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data),
               opts, o->errors, o->dt_mode, o->decoders, &o->classes};
    if (ctx.len - pos < 5) {
        PyErr_Format(InvalidBSON, "not enough bytes for a BSON document (%zd)", ctx.len - pos);
        return NULL;
    }
    int32_t size = read_i32(ctx.buf + pos);
    Py_ssize_t stop = pos + size;
    if (size < 5 || stop > ctx.len) {
        PyErr_Format(InvalidBSON, "BSON document length %d does not match the data", (int)size);
        return NULL;
    }
    if (ctx.buf[stop - 1])
        return bad("BSON document is not terminated by a NUL byte");
    PyObject *doc = decode_document(&ctx, pos + 4, stop - 1, 0);
    if (doc == NULL) {
        translate_error();
        return NULL;
    }
    *stop_out = stop;
    return doc;
}

/* bytes(data) for bytes-like input, as the pure codec's _as_bytes; a new reference. */
static PyObject *as_bytes(PyObject *data)
{
    if (PyBytes_CheckExact(data))
        return Py_NewRef(data);
    if (PyBytes_Check(data) || PyByteArray_Check(data) || PyMemoryView_Check(data))
        return PyObject_CallOneArg((PyObject *)&PyBytes_Type, data);
    PyErr_Format(PyExc_TypeError, "BSON data must be bytes-like, not %s", Py_TYPE(data)->tp_name);
    return NULL;
}

static PyObject *cdecode_decode(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "decode(data, codec_options) takes 2 arguments");
        return NULL;
    }
    PyObject *raw = as_bytes(args[0]);
    if (raw == NULL)
        return NULL;
    Opts o;
    Py_ssize_t stop = 0;
    PyObject *doc = NULL;
    if (read_options(args[1], &o) == 0)
        doc = decode_at(raw, 0, args[1], &o, &stop);
    if (doc != NULL && stop != PyBytes_GET_SIZE(raw)) {
        PyErr_Format(InvalidBSON, "%zd bytes after the end of the BSON document",
                     PyBytes_GET_SIZE(raw) - stop);
        Py_CLEAR(doc);
    }
    Py_DECREF(raw);
    return doc;
}

static PyObject *cdecode_decode_all(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "decode_all(data, codec_options) takes 2 arguments");
        return NULL;
    }
    PyObject *raw = as_bytes(args[0]);
    if (raw == NULL)
        return NULL;
    PyObject *docs = PyList_New(0);
    Opts o;
    if (docs == NULL || read_options(args[1], &o) < 0)
        goto fail;
    Py_ssize_t pos = 0;
    while (pos < PyBytes_GET_SIZE(raw)) {
        PyObject *doc = decode_at(raw, pos, args[1], &o, &pos);
        if (doc == NULL)
            goto fail;
        int rc = PyList_Append(docs, doc);
        Py_DECREF(doc);
        if (rc < 0)
            goto fail;
    }
    Py_DECREF(raw);
    return docs;
fail:
    Py_XDECREF(docs);
    Py_DECREF(raw);
    return NULL;
}

static PyObject *cdecode_decode_document_at(PyObject *self, PyObject *const *args,
                                            Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError,
                        "decode_document_at(data, pos, codec_options) takes 3 arguments");
        return NULL;
    }
    PyObject *data = args[0];
    Py_ssize_t pos = -1;
    if (PyLong_CheckExact(args[1])) {
        pos = PyLong_AsSsize_t(args[1]);
        if (pos == -1 && PyErr_Occurred())
            PyErr_Clear();
    }
    Opts o = {0};
    /* Anything but exact bytes and a plain non-negative int: the reference decides. */
    if (PyBytes_CheckExact(data) && pos >= 0) {
        if (read_options(args[2], &o) < 0)
            return NULL;
    } else {
        return PyObject_Vectorcall(PyDecodeDocumentAt, args, 3, NULL);
    }
    Py_ssize_t stop = 0;
    PyObject *doc = decode_at(data, pos, args[2], &o, &stop);
    if (doc == NULL)
        return NULL;
    PyObject *end = PyLong_FromSsize_t(stop);
    if (end == NULL) {
        Py_DECREF(doc);
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, doc, end);
    Py_DECREF(doc);
    Py_DECREF(end);
    return pair;
}

/* -- module --------------------------------------------------------------------------------- */

static PyMethodDef cdecode_methods[] = {
    {"decode", (PyCFunction)(void (*)(void))cdecode_decode, METH_FASTCALL,
     "decode(data, codec_options): exactly one BSON document (as the pure codec's decode)."},
    {"decode_all", (PyCFunction)(void (*)(void))cdecode_decode_all, METH_FASTCALL,
     "decode_all(data, codec_options): concatenated BSON documents as a list."},
    {"decode_document_at", (PyCFunction)(void (*)(void))cdecode_decode_document_at,
     METH_FASTCALL,
     "decode_document_at(data, pos, codec_options): (document, position after it)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef cdecode_module = {
    PyModuleDef_HEAD_INIT,
    "asyncmongo.bson._cdecode",
    "The compiled BSON decoder; behaves exactly as asyncmongo.bson._decode.",
    -1,
    cdecode_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

static PyObject *import_attr(const char *module, const char *name)
{
    PyObject *mod = PyImport_ImportModule(module);
    if (mod == NULL)
        return NULL;
    PyObject *attr = PyObject_GetAttrString(mod, name);
    Py_DECREF(mod);
    return attr;
}

/* The slot descriptor `name` of a class, checked to be a data descriptor. */
static PyObject *slot_descriptor(PyTypeObject *type, const char *name)
{
    PyObject *descr = PyDict_GetItemString(type->tp_dict, name);
    if (descr == NULL || Py_TYPE(descr)->tp_descr_set == NULL) {
        PyErr_Format(PyExc_ImportError, "%s.%s is not a slot", type->tp_name, name);
        return NULL;
    }
    return Py_NewRef(descr);
}

static PyTypeObject *import_type(const char *module, const char *name)
{
    PyObject *type = import_attr(module, name);
    if (type != NULL && !PyType_Check(type)) {
        PyErr_Format(PyExc_ImportError, "%s.%s is not a class", module, name);
        Py_CLEAR(type);
    }
    return (PyTypeObject *)type;
}

static int init_rare_readers(void)
{
    PyObject *rare = import_attr("asyncmongo.bson._decode", "_RARE");
    if (rare == NULL)
        return -1;
    if (!PyDict_Check(rare)) {
        Py_DECREF(rare);
        PyErr_SetString(PyExc_ImportError, "_decode._RARE is not a dict");
        return -1;
    }
    PyObject *key, *value;
    Py_ssize_t i = 0;
    while (PyDict_Next(rare, &i, &key, &value)) {
        long t = PyLong_AsLong(key);
        if (t < 0 || t > 255) {
            Py_DECREF(rare);
            PyErr_SetString(PyExc_ImportError, "_decode._RARE has a key that is not a byte");
            return -1;
        }
        RareReaders[t] = Py_NewRef(value);
    }
    Py_DECREF(rare);
    return 0;
}

#define INTERN(var, text)                                                                 \
    do {                                                                                  \
        if ((var = PyUnicode_InternFromString(text)) == NULL)                             \
            return NULL;                                                                  \
    } while (0)

static PyObject *init_module(void);

/* Any failure to bind to the pure decoder is an ImportError, so codec.py falls back to the
 * pure codec (and ASYNCMONGO_REQUIRE_EXTENSIONS makes the test run say so). */
PyMODINIT_FUNC PyInit__cdecode(void)
{
    PyObject *module = init_module();
    if (module == NULL && !PyErr_ExceptionMatches(PyExc_ImportError)) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        PyErr_Format(PyExc_ImportError,
                     "asyncmongo.bson._cdecode cannot bind to asyncmongo.bson._decode: %S",
                     value);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
    }
    return module;
}

static PyObject *init_module(void)
{
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL)
        return NULL;
    const char *decode_mod = "asyncmongo.bson._decode";
    if ((InvalidBSON = import_attr("asyncmongo.bson.errors", "InvalidBSON")) == NULL ||
        (StructError = import_attr("struct", "error")) == NULL ||
        (ObjectIdType = import_type("asyncmongo.bson.objectid", "ObjectId")) == NULL ||
        (ObjectIdBinary = slot_descriptor(ObjectIdType, "_binary")) == NULL ||
        (TimestampType = import_type("asyncmongo.bson.types", "Timestamp")) == NULL ||
        (TimestampTime = slot_descriptor(TimestampType, "time")) == NULL ||
        (TimestampInc = slot_descriptor(TimestampType, "inc")) == NULL ||
        (Decimal128Type = import_type("asyncmongo.bson.decimal128", "Decimal128")) == NULL ||
        (Decimal128Bits = slot_descriptor(Decimal128Type, "_bits")) == NULL ||
        (Int64Type = import_type("asyncmongo.bson.types", "Int64")) == NULL ||
        (CodecOptionsType = import_attr("asyncmongo.bson.codec_options", "CodecOptions")) ==
            NULL ||
        (MinKeyValue = import_attr(decode_mod, "_MIN_KEY")) == NULL ||
        (MaxKeyValue = import_attr(decode_mod, "_MAX_KEY")) == NULL ||
        (UndefinedValue = import_attr(decode_mod, "_UNDEFINED")) == NULL ||
        (PyDecodeDocumentAt = import_attr(decode_mod, "decode_document_at")) == NULL ||
        (PyDbrefOrDocument = import_attr(decode_mod, "_dbref_or_document")) == NULL ||
        (PyDatetimeFromMs = import_attr(decode_mod, "_datetime_from_ms")) == NULL ||
        (PyApplyDecoder = import_attr(decode_mod, "apply_decoder")) == NULL ||
        (UserCodeError = import_attr(decode_mod, "_UserCodeError")) == NULL ||
        init_rare_readers() < 0)
        return NULL;
    Int64IsPlainInt = PyType_IsSubtype(Int64Type, &PyLong_Type) &&
                      Int64Type->tp_basicsize == PyLong_Type.tp_basicsize &&
                      Int64Type->tp_itemsize == PyLong_Type.tp_itemsize &&
                      Int64Type->tp_alloc == PyType_GenericAlloc;
    PyObject *depth = import_attr(decode_mod, "MAX_NESTING_DEPTH");
    if (depth == NULL)
        return NULL;
    MaxNestingDepth = PyLong_AsLong(depth);
    Py_DECREF(depth);
    if (MaxNestingDepth == -1 && PyErr_Occurred())
        return NULL;
    INTERN(str_ref, "$ref");
    INTERN(str_document_class, "document_class");
    INTERN(str_tz_aware, "tz_aware");
    INTERN(str_tzinfo, "tzinfo");
    INTERN(str_datetime_conversion, "datetime_conversion");
    INTERN(str_unicode_decode_error_handler, "unicode_decode_error_handler");
    INTERN(str_type_registry, "type_registry");
    INTERN(str_decoder_map, "_decoder_map");
    INTERN(str_value_classes, "value_classes");
    INTERN(str_object_id, "object_id");
    INTERN(str_object_id_slot, "object_id_slot");
    INTERN(str_int64, "int64");
    INTERN(str_timestamp, "timestamp");
    INTERN(str_timestamp_slots, "timestamp_slots");
    INTERN(str_decimal128, "decimal128");
    INTERN(str_decimal128_slots, "decimal128_slots");
    INTERN(str_min_key, "min_key");
    INTERN(str_max_key, "max_key");
    INTERN(str_undefined, "undefined");
    INTERN(str_error, "error");
    return PyModule_Create(&cdecode_module);
}
