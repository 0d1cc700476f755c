/* safetensors.c — validating, mmap-backed safetensors reader.
 *
 * Layout: u64 little-endian header length N, N bytes of JSON, data area.
 * The header is parsed with jansson (duplicate keys rejected); every entry is
 * checked (dtype, shape, data_offsets inside the data area and consistent with
 * shape x dtype, tensors tiling the data area as upstream requires) before
 * the handle is returned. Values are converted on request from the
 * read-only mapping. See docs/formats.md. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io_internal.h"

struct ag_safetensors {
    char *path;
    const unsigned char *map; /* whole file, or NULL if the data area is empty */
    size_t map_len;
    size_t file_size;
    size_t data_start; /* 8 + N */
    size_t data_size;
    size_t count;
    ag_tensor_info *tensors; /* ascending data offset */
    size_t *by_name;         /* indices into tensors, sorted by name */
    size_t nmeta;
    char **meta_keys, **meta_values; /* sorted by key */
};

#define NAME_FMT "%.200s"

void ag_st_close(ag_safetensors *st)
{
    if (!st)
        return;
    if (st->map)
        munmap((void *)st->map, st->map_len);
    for (size_t i = 0; i < st->count; i++)
        free((char *)st->tensors[i].name);
    for (size_t i = 0; i < st->nmeta; i++) {
        free(st->meta_keys[i]);
        free(st->meta_values[i]);
    }
    free(st->meta_keys);
    free(st->meta_values);
    free(st->tensors);
    free(st->by_name);
    free(st->path);
    free(st);
}

const char *ag_st_path(const ag_safetensors *st) { return st ? st->path : NULL; }
size_t ag_st_count(const ag_safetensors *st) { return st ? st->count : 0; }

const ag_tensor_info *ag_st_info(const ag_safetensors *st, size_t i)
{
    if (!st || i >= st->count)
        return NULL;
    return &st->tensors[i];
}

const ag_tensor_info *ag_st_find(const ag_safetensors *st, const char *name)
{
    if (!st || !name)
        return NULL;
    size_t lo = 0, hi = st->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const ag_tensor_info *t = &st->tensors[st->by_name[mid]];
        int c = strcmp(name, t->name);
        if (c == 0)
            return t;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const unsigned char *agi_st_bytes(const ag_safetensors *st, const ag_tensor_info *t)
{
    if (!st || !t || !st->map || t->offset > st->map_len || t->nbytes > st->map_len - t->offset)
        return NULL;
    return st->map + t->offset;
}

const char *ag_st_metadata(const ag_safetensors *st, const char *key)
{
    if (!st || !key)
        return NULL;
    size_t lo = 0, hi = st->nmeta;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(key, st->meta_keys[mid]);
        if (c == 0)
            return st->meta_values[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* ---- open ----------------------------------------------------------------- */

/* qsort comparators need context; the tensor array is passed through a
 * file-static pointer only during open (single call, no re-entrancy issue
 * because it is set and used inside one qsort call on this thread). */
static _Thread_local const ag_tensor_info *sort_base;

static int cmp_offset(const void *a, const void *b)
{
    const ag_tensor_info *x = a, *y = b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    if (x->nbytes != y->nbytes)
        return x->nbytes < y->nbytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_name_idx(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    return strcmp(sort_base[i].name, sort_base[j].name);
}

typedef struct {
    char *key, *value;
} meta_pair;

static int cmp_meta(const void *a, const void *b)
{
    return strcmp(((const meta_pair *)a)->key, ((const meta_pair *)b)->key);
}

/* Non-negative JSON integer -> size_t. */
static int json_size(const json_t *v, size_t *out)
{
    if (!json_is_integer(v))
        return -1;
    json_int_t x = json_integer_value(v);
    if (x < 0 || (unsigned long long)x > SIZE_MAX)
        return -1;
    *out = (size_t)x;
    return 0;
}

/* Shape part of an entry: rank, dimensions and element count. */
static int parse_shape(const char *path, const char *name, json_t *js,
                       ag_tensor_info *t, ag_error *err)
{
    if (!js || !json_is_array(js))
        return ag_error_set(err, AG_EFORMAT,
                            "%s: tensor '" NAME_FMT "': missing or non-array \"shape\"",
                            path, name);
    size_t rank = json_array_size(js);
    if (rank > AG_MAX_DIMS)
        return ag_error_set(err, AG_ESHAPE,
                            "%s: tensor '" NAME_FMT "' has rank %zu; at most %d "
                            "dimensions are supported",
                            path, name, rank, AG_MAX_DIMS);
    t->ndim = (int)rank;
    size_t nelem = 1;
    for (size_t k = 0; k < rank; k++) {
        if (json_size(json_array_get(js, k), &t->shape[k]) != 0)
            return ag_error_set(err, AG_EFORMAT,
                                "%s: tensor '" NAME_FMT "': \"shape\" must be an "
                                "array of non-negative integers",
                                path, name);
        if (agi_mul(nelem, t->shape[k], &nelem) != 0)
            return ag_error_set(err, AG_ELIMIT,
                                "%s: tensor '" NAME_FMT "': shape is too large",
                                path, name);
    }
    t->nelem = nelem;
    return AG_OK;
}

/* data_offsets part of an entry: [begin, end] inside the data area and
 * exactly the need bytes that shape x dtype take. */
static int parse_offsets(const char *path, const char *name, json_t *jo,
                         size_t data_size, size_t need, ag_tensor_info *t,
                         ag_error *err)
{
    size_t begin, end;
    if (!jo || !json_is_array(jo) || json_array_size(jo) != 2 ||
        json_size(json_array_get(jo, 0), &begin) != 0 ||
        json_size(json_array_get(jo, 1), &end) != 0)
        return ag_error_set(err, AG_EFORMAT,
                            "%s: tensor '" NAME_FMT "': \"data_offsets\" must be "
                            "[begin, end] with non-negative integers",
                            path, name);
    if (begin > end || end > data_size)
        return ag_error_set(err, AG_EFORMAT,
                            "%s: tensor '" NAME_FMT "': data_offsets [%zu, %zu] "
                            "out of range (data area is %zu bytes)",
                            path, name, begin, end, data_size);
    if (end - begin != need) {
        char shp[AG_MAX_DIMS * 24 + 8];
        agi_format_shape(shp, sizeof shp, t->ndim, t->shape);
        return ag_error_set(err, AG_EFORMAT,
                            "%s: tensor '" NAME_FMT "': data_offsets [%zu, %zu] "
                            "span %zu bytes but shape %s of %s needs %zu",
                            path, name, begin, end, end - begin, shp,
                            ag_dtype_name(t->dtype), need);
    }
    t->offset = begin; /* made absolute by the caller */
    t->nbytes = need;
    return AG_OK;
}

/* One header entry. The checks run in a fixed order (object, dtype, shape,
 * whole bytes, data_offsets) so a bad file always gets the same message. */
static int parse_entry(const char *path, const char *name, json_t *val,
                       size_t data_size, ag_tensor_info *t, ag_error *err)
{
    int rc;
    if (!json_is_object(val))
        return ag_error_set(err, AG_EFORMAT,
                            "%s: tensor '" NAME_FMT "': entry is not a JSON object",
                            path, name);
    json_t *jd = json_object_get(val, "dtype");
    json_t *js = json_object_get(val, "shape");
    json_t *jo = json_object_get(val, "data_offsets");
    if (!jd || !json_is_string(jd))
        return ag_error_set(err, AG_EFORMAT,
                            "%s: tensor '" NAME_FMT "': missing or non-string \"dtype\"",
                            path, name);
    if (agi_dtype_from_name(json_string_value(jd), &t->dtype) != 0)
        return ag_error_set(err, AG_EDTYPE,
                            "%s: tensor '" NAME_FMT "' has unknown dtype '%.40s'",
                            path, name, json_string_value(jd));
    if ((rc = parse_shape(path, name, js, t, err)) != AG_OK)
        return rc;
    size_t nbits;
    unsigned bits = ag_dtype_bits(t->dtype);
    if (agi_mul(t->nelem, bits, &nbits) != 0)
        return ag_error_set(err, AG_ELIMIT,
                            "%s: tensor '" NAME_FMT "': shape is too large", path,
                            name);
    /* sub-byte dtypes (F4, ...) can leave a partial byte; refuse it */
    if (nbits % 8 != 0)
        return ag_error_set(err, AG_EFORMAT,
                            "%s: tensor '" NAME_FMT "': %zu elements of %s "
                            "(%u bits each) do not fill whole bytes",
                            path, name, t->nelem, ag_dtype_name(t->dtype), bits);
    return parse_offsets(path, name, jo, data_size, nbits / 8, t, err);
}

/* errno is read first, before anything can overwrite it; agi_pread_full
 * sets it 0 when the file ended early. */
static int read_error(const char *path, ag_error *err)
{
    int e = errno;
    return ag_error_set(err, AG_EIO, "%s: read error: %s", path,
                        e ? agi_strerror(e) : "file ended early");
}

/* The u64 header length N: capped before it is trusted, then checked against
 * the file. */
static int read_header_len(int fd, const char *path, size_t size, size_t *n,
                           ag_error *err)
{
    if (size < 8)
        return ag_error_set(err, AG_EFORMAT,
                            "%s: file of %zu bytes is too short for a safetensors "
                            "header",
                            path, size);
    unsigned char lenbuf[8];
    if (agi_pread_full(fd, lenbuf, 8, 0) != 0)
        return read_error(path, err);
    uint64_t n64 = agi_le64(lenbuf);
    if (n64 > AG_ST_HEADER_MAX)
        return ag_error_set(err, AG_ELIMIT,
                            "%s: safetensors header length %llu exceeds the cap "
                            "of %u bytes",
                            path, (unsigned long long)n64, AG_ST_HEADER_MAX);
    if (n64 < 2)
        return ag_error_set(err, AG_EFORMAT,
                            "%s: safetensors header length %llu is too small",
                            path, (unsigned long long)n64);
    if ((size_t)n64 > size - 8)
        return ag_error_set(err, AG_EFORMAT,
                            "%s: safetensors header length %zu goes beyond the "
                            "end of the file (%zu bytes)",
                            path, (size_t)n64, size);
    *n = (size_t)n64;
    return AG_OK;
}

/* The n header bytes after the length, parsed; *root is a JSON object owned
 * by the caller on success and NULL otherwise. */
static int load_header(int fd, const char *path, size_t n, json_t **root,
                       ag_error *err)
{
    *root = NULL;
    char *hdr = malloc(n);
    if (!hdr)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    if (agi_pread_full(fd, hdr, n, 8) != 0) {
        int rc = read_error(path, err);
        free(hdr);
        return rc;
    }
    json_error_t jerr;
    json_t *j = json_loadb(hdr, n, JSON_REJECT_DUPLICATES, &jerr);
    free(hdr);
    if (!j)
        return ag_error_set(err, AG_EFORMAT,
                            "%s: safetensors header is not valid JSON: %s (line "
                            "%d, column %d)",
                            path, jerr.text, jerr.line, jerr.column);
    if (!json_is_object(j)) {
        json_decref(j);
        return ag_error_set(err, AG_EFORMAT,
                            "%s: safetensors header is not a JSON object", path);
    }
    *root = j;
    return AG_OK;
}

static void free_meta(meta_pair *meta, size_t nmeta)
{
    if (!meta)
        return;
    for (size_t i = 0; i < nmeta; i++) {
        free(meta[i].key);
        free(meta[i].value);
    }
    free(meta);
}

/* "__metadata__" (string to string) into a key-sorted array. Kept apart from
 * the handle until the tensors have passed, as *meta / *nmeta, which the
 * caller frees with free_meta whatever the status (partial on failure). */
static int parse_metadata(const char *path, json_t *jmeta, meta_pair **meta,
                          size_t *nmeta, ag_error *err)
{
    if (!json_is_object(jmeta))
        return ag_error_set(err, AG_EFORMAT,
                            "%s: \"__metadata__\" is not a JSON object", path);
    size_t m = json_object_size(jmeta);
    meta_pair *mp = calloc(m ? m : 1, sizeof *mp);
    if (!mp)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    *meta = mp;
    const char *k;
    json_t *v;
    json_object_foreach(jmeta, k, v)
    {
        if (!json_is_string(v))
            return ag_error_set(err, AG_EFORMAT,
                                "%s: \"__metadata__\" value of '" NAME_FMT
                                "' is not a string",
                                path, k);
        meta_pair *e = &mp[(*nmeta)++]; /* counted first: freed even if half-set */
        e->key = strdup(k);
        e->value = strdup(json_string_value(v));
        if (!e->key || !e->value)
            return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    }
    qsort(mp, *nmeta, sizeof *mp, cmp_meta);
    return AG_OK;
}

/* Every entry of root but "__metadata__", in header order; st->count grows
 * only for fully parsed entries so ag_st_close frees exactly the names set. */
static int parse_tensors(ag_safetensors *st, json_t *root, size_t ntensors,
                         ag_error *err)
{
    int rc;
    const char *path = st->path;
    st->tensors = calloc(ntensors ? ntensors : 1, sizeof *st->tensors);
    st->by_name = calloc(ntensors ? ntensors : 1, sizeof *st->by_name);
    if (!st->tensors || !st->by_name)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v)
    {
        if (strcmp(k, "__metadata__") == 0)
            continue;
        size_t klen = strlen(k);
        if (klen > AG_ST_NAME_MAX)
            return ag_error_set(err, AG_ELIMIT,
                                "%s: tensor name of %zu bytes exceeds the cap "
                                "of %u bytes",
                                path, klen, AG_ST_NAME_MAX);
        ag_tensor_info *t = &st->tensors[st->count];
        if ((rc = parse_entry(path, k, v, st->data_size, t, err)) != AG_OK)
            return rc;
        if (!(t->name = strdup(k)))
            return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
        st->count++;
    }
    return AG_OK;
}

/* The tensors must tile the data area, as upstream safetensors requires
 * (Metadata::validate, then MetadataIncompleteBuffer): sorted by (begin, end),
 * each begins where the one before it ends, the first at 0, and the last
 * ends at the end of the data area. So no two tensors share a byte, no byte
 * belongs to none, and a zero-size tensor sits between two others (or at
 * either end), never inside one. */
static int check_tiling(const ag_safetensors *st, ag_error *err)
{
    size_t pos = 0;
    for (size_t i = 0; i < st->count; i++) {
        const ag_tensor_info *t = &st->tensors[i], *prev = i ? &st->tensors[i - 1] : NULL;
        if (t->offset < pos) /* prev ends at pos > 0, so there is one */
            return ag_error_set(err, AG_EFORMAT,
                                "%s: tensor '" NAME_FMT "' [%zu, %zu] begins inside '" NAME_FMT
                                "' [%zu, %zu] (tensors must follow each other without overlap)",
                                st->path, t->name, t->offset, t->offset + t->nbytes, prev->name,
                                prev->offset, pos);
        if (t->offset > pos)
            return ag_error_set(err, AG_EFORMAT,
                                "%s: bytes [%zu, %zu) of the data area belong to no tensor "
                                "(before '" NAME_FMT "'; tensors must follow each other)",
                                st->path, pos, t->offset, t->name);
        pos = t->offset + t->nbytes;
    }
    if (pos != st->data_size)
        return ag_error_set(err, AG_EFORMAT,
                            "%s: bytes [%zu, %zu) of the data area belong to no tensor "
                            "(the tensors must fill it to the end of the file)",
                            st->path, pos, st->data_size);
    return AG_OK;
}

/* Ascending offset, checked to tile the data area; offsets become absolute
 * and the name index is built. Sorting by (offset, nbytes, name) makes the
 * reported pair independent of header order. */
static int sort_tensors(ag_safetensors *st, ag_error *err)
{
    qsort(st->tensors, st->count, sizeof *st->tensors, cmp_offset);
    int rc = check_tiling(st, err);
    if (rc != AG_OK)
        return rc;
    for (size_t i = 0; i < st->count; i++) {
        st->tensors[i].offset += st->data_start;
        st->by_name[i] = i;
    }
    sort_base = st->tensors;
    qsort(st->by_name, st->count, sizeof *st->by_name, cmp_name_idx);
    sort_base = NULL;
    return AG_OK;
}

/* Moves the sorted metadata strings into the handle; on success *meta is
 * freed and emptied, on failure it stays with the caller. */
static int take_metadata(ag_safetensors *st, meta_pair **meta, size_t *nmeta,
                         ag_error *err)
{
    size_t n = *nmeta;
    if (!n)
        return AG_OK;
    st->meta_keys = calloc(n, sizeof(char *));
    st->meta_values = calloc(n, sizeof(char *));
    if (!st->meta_keys || !st->meta_values)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", st->path);
    for (size_t i = 0; i < n; i++) {
        st->meta_keys[i] = (*meta)[i].key;
        st->meta_values[i] = (*meta)[i].value;
    }
    st->nmeta = n;
    free(*meta);
    *meta = NULL;
    *nmeta = 0;
    return AG_OK;
}

/* The whole file is mapped, as tensor offsets are absolute. An empty data
 * area leaves st->map NULL: no tensor has a byte to read. */
static int map_data(ag_safetensors *st, int fd, ag_error *err)
{
    if (st->data_size == 0)
        return AG_OK;
    void *m = mmap(NULL, st->file_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED && errno == ENOMEM) /* e.g. under ulimit -v */
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory: cannot map the file", st->path);
    if (m == MAP_FAILED)
        return ag_error_set(err, AG_EIO, "%s: cannot map the file: %s", st->path,
                            agi_strerror(errno));
    st->map = m;
    st->map_len = st->file_size;
    return AG_OK;
}

/* An empty handle for a file of size bytes whose header is n bytes long. */
static int st_new(const char *path, size_t size, size_t n, ag_safetensors **out,
                  ag_error *err)
{
    ag_safetensors *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(path))) {
        free(st);
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    }
    st->file_size = size;
    st->data_start = 8 + n;
    st->data_size = size - 8 - n;
    *out = st;
    return AG_OK;
}

int ag_st_open(const char *path, ag_safetensors **out, ag_error *err)
{
    int fd = -1, rc;
    size_t size, n = 0, nmeta = 0;
    json_t *root = NULL;
    meta_pair *meta = NULL;
    ag_safetensors *st = NULL;

    if (!out)
        return ag_error_set(err, AG_EINVAL, "ag_st_open: no output handle");
    *out = NULL;
    if ((rc = agi_open_regular(path, &fd, &size, err)) != AG_OK)
        return rc;
    if ((rc = read_header_len(fd, path, size, &n, err)) != AG_OK ||
        (rc = load_header(fd, path, n, &root, err)) != AG_OK ||
        (rc = st_new(path, size, n, &st, err)) != AG_OK)
        goto fail;

    json_t *jmeta = json_object_get(root, "__metadata__");
    size_t ntensors = json_object_size(root) - (jmeta ? 1 : 0);
    /* capped before anything is allocated for the tensors */
    if (ntensors > AG_ST_TENSORS_MAX) {
        rc = ag_error_set(err, AG_ELIMIT, "%s: %zu tensors exceed the cap of %u",
                          path, ntensors, AG_ST_TENSORS_MAX);
        goto fail;
    }
    if ((jmeta && (rc = parse_metadata(path, jmeta, &meta, &nmeta, err)) != AG_OK) ||
        (rc = parse_tensors(st, root, ntensors, err)) != AG_OK)
        goto fail;
    json_decref(root);
    root = NULL;
    if ((rc = sort_tensors(st, err)) != AG_OK ||
        (rc = take_metadata(st, &meta, &nmeta, err)) != AG_OK ||
        (rc = map_data(st, fd, err)) != AG_OK)
        goto fail;
    close(fd);
    *out = st;
    return AG_OK;

fail:
    free_meta(meta, nmeta);
    json_decref(root);
    ag_st_close(st);
    close(fd);
    return rc;
}

/* ---- values --------------------------------------------------------------- */

/* Checks shared by the two readers. */
static int check_readable(const ag_safetensors *st, const ag_tensor_info *t,
                          ag_error *err)
{
    if (!ag_dtype_is_float(t->dtype))
        return ag_error_set(err, AG_EDTYPE,
                            "%s: tensor '" NAME_FMT "' has dtype %s; only F16, "
                            "BF16, F32, F64 values can be read",
                            st->path, t->name, ag_dtype_name(t->dtype));
    size_t need;
    if (agi_mul(t->nelem, ag_dtype_bits(t->dtype) / 8, &need) != 0 ||
        need != t->nbytes || t->offset < st->data_start ||
        t->offset > st->file_size || t->nbytes > st->file_size - t->offset ||
        (t->nbytes > 0 && !st->map))
        return ag_error_set(err, AG_EINVAL,
                            "%s: tensor '" NAME_FMT "': inconsistent tensor info",
                            st->path, t->name);
    return AG_OK;
}

int ag_st_read(const ag_safetensors *st, const char *name, ag_array *out,
               ag_error *err)
{
    int rc;
    if (!st || !name || !out)
        return ag_error_set(err, AG_EINVAL, "ag_st_read: missing argument");
    memset(out, 0, sizeof *out);
    const ag_tensor_info *t = ag_st_find(st, name);
    if (!t)
        return ag_error_set(err, AG_ENOTFOUND, "no tensor '" NAME_FMT "' in %s",
                            name, st->path);
    if ((rc = check_readable(st, t, err)) != AG_OK)
        return rc;
    if ((rc = ag_array_alloc(out, t->ndim, t->shape, err)) != AG_OK)
        return ag_error_set(err, rc, "%s: tensor '" NAME_FMT "': %s", st->path,
                            t->name,
                            rc == AG_ENOMEM ? "out of memory" : "too large");
    size_t w = ag_dtype_bits(t->dtype) / 8;
    const unsigned char *p = st->map ? st->map + t->offset : NULL;
    for (size_t i = 0; i < t->nelem; i++)
        out->data[i] = agi_decode_float(t->dtype, p + i * w);
    return AG_OK;
}

int ag_st_read_f32(const ag_safetensors *st, const ag_tensor_info *info,
                   float *dst, ag_error *err)
{
    int rc;
    if (!st || !info)
        return ag_error_set(err, AG_EINVAL, "ag_st_read_f32: missing argument");
    if ((rc = check_readable(st, info, err)) != AG_OK)
        return rc;
    if (info->nelem > 0 && !dst)
        return ag_error_set(err, AG_EINVAL, "ag_st_read_f32: no output buffer");
    size_t w = ag_dtype_bits(info->dtype) / 8;
    const unsigned char *p = st->map ? st->map + info->offset : NULL;
    for (size_t i = 0; i < info->nelem; i++)
        dst[i] = (float)agi_decode_float(info->dtype, p + i * w);
    return AG_OK;
}
