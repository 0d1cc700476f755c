/* safetensors.c — validating, mmap-backed safetensors reader.
 *
 * Layout: u64 little-endian header length N, N bytes of JSON, data area.
 * The header is parsed with jansson (duplicate keys rejected); every entry is
 * checked (dtype, shape, data_offsets inside the data area and consistent with
 * shape x dtype, no overlaps) before the handle is returned. Values are
 * converted on request from the read-only mapping. See docs/formats.md. */
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

static int parse_entry(const char *path, const char *name, json_t *val,
                       size_t data_size, ag_tensor_info *t, ag_error *err)
{
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
    size_t nbits;
    unsigned bits = ag_dtype_bits(t->dtype);
    if (agi_mul(nelem, bits, &nbits) != 0)
        return ag_error_set(err, AG_ELIMIT,
                            "%s: tensor '" NAME_FMT "': shape is too large", path,
                            name);
    if (nbits % 8 != 0)
        return ag_error_set(err, AG_EFORMAT,
                            "%s: tensor '" NAME_FMT "': %zu elements of %s "
                            "(%u bits each) do not fill whole bytes",
                            path, name, nelem, ag_dtype_name(t->dtype), bits);
    size_t need = nbits / 8;
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

int ag_st_open(const char *path, ag_safetensors **out, ag_error *err)
{
    int fd = -1, rc = AG_OK;
    size_t size;
    char *hdr = NULL;
    json_t *root = NULL;
    meta_pair *meta = NULL;
    size_t nmeta = 0;
    ag_safetensors *st = NULL;

    if (!out)
        return ag_error_set(err, AG_EINVAL, "ag_st_open: no output handle");
    *out = NULL;
    if ((rc = agi_open_regular(path, &fd, &size, err)) != AG_OK)
        return rc;
    if (size < 8) {
        rc = ag_error_set(err, AG_EFORMAT,
                          "%s: file of %zu bytes is too short for a safetensors "
                          "header",
                          path, size);
        goto fail;
    }
    unsigned char lenbuf[8];
    if (agi_pread_full(fd, lenbuf, 8, 0) != 0) {
        int e = errno;
        rc = ag_error_set(err, AG_EIO, "%s: read error: %s", path,
                          e ? strerror(e) : "file ended early");
        goto fail;
    }
    uint64_t n64 = agi_le64(lenbuf);
    if (n64 > AG_ST_HEADER_MAX) {
        rc = ag_error_set(err, AG_ELIMIT,
                          "%s: safetensors header length %llu exceeds the cap "
                          "of %u bytes",
                          path, (unsigned long long)n64, AG_ST_HEADER_MAX);
        goto fail;
    }
    if (n64 < 2) {
        rc = ag_error_set(err, AG_EFORMAT,
                          "%s: safetensors header length %llu is too small",
                          path, (unsigned long long)n64);
        goto fail;
    }
    size_t n = (size_t)n64;
    if (n > size - 8) {
        rc = ag_error_set(err, AG_EFORMAT,
                          "%s: safetensors header length %zu goes beyond the "
                          "end of the file (%zu bytes)",
                          path, n, size);
        goto fail;
    }
    hdr = malloc(n);
    if (!hdr) {
        rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    if (agi_pread_full(fd, hdr, n, 8) != 0) {
        int e = errno;
        rc = ag_error_set(err, AG_EIO, "%s: read error: %s", path,
                          e ? strerror(e) : "file ended early");
        goto fail;
    }
    json_error_t jerr;
    root = json_loadb(hdr, n, JSON_REJECT_DUPLICATES, &jerr);
    free(hdr);
    hdr = NULL;
    if (!root) {
        rc = ag_error_set(err, AG_EFORMAT,
                          "%s: safetensors header is not valid JSON: %s (line "
                          "%d, column %d)",
                          path, jerr.text, jerr.line, jerr.column);
        goto fail;
    }
    if (!json_is_object(root)) {
        rc = ag_error_set(err, AG_EFORMAT,
                          "%s: safetensors header is not a JSON object", path);
        goto fail;
    }

    st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(path))) {
        rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    st->file_size = size;
    st->data_start = 8 + n;
    st->data_size = size - 8 - n;

    json_t *jmeta = json_object_get(root, "__metadata__");
    size_t ntensors = json_object_size(root) - (jmeta ? 1 : 0);
    if (ntensors > AG_ST_TENSORS_MAX) {
        rc = ag_error_set(err, AG_ELIMIT,
                          "%s: %zu tensors exceed the cap of %u", path, ntensors,
                          AG_ST_TENSORS_MAX);
        goto fail;
    }
    if (jmeta) {
        if (!json_is_object(jmeta)) {
            rc = ag_error_set(err, AG_EFORMAT,
                              "%s: \"__metadata__\" is not a JSON object", path);
            goto fail;
        }
        size_t m = json_object_size(jmeta);
        meta = calloc(m ? m : 1, sizeof *meta);
        if (!meta) {
            rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
            goto fail;
        }
        const char *k;
        json_t *v;
        json_object_foreach(jmeta, k, v)
        {
            if (!json_is_string(v)) {
                rc = ag_error_set(err, AG_EFORMAT,
                                  "%s: \"__metadata__\" value of '" NAME_FMT
                                  "' is not a string",
                                  path, k);
                goto fail;
            }
            meta[nmeta].key = strdup(k);
            meta[nmeta].value = strdup(json_string_value(v));
            nmeta++;
            if (!meta[nmeta - 1].key || !meta[nmeta - 1].value) {
                rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
                goto fail;
            }
        }
        qsort(meta, nmeta, sizeof *meta, cmp_meta);
    }

    st->tensors = calloc(ntensors ? ntensors : 1, sizeof *st->tensors);
    st->by_name = calloc(ntensors ? ntensors : 1, sizeof *st->by_name);
    if (!st->tensors || !st->by_name) {
        rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    {
        const char *k;
        json_t *v;
        json_object_foreach(root, k, v)
        {
            if (strcmp(k, "__metadata__") == 0)
                continue;
            size_t klen = strlen(k);
            if (klen > AG_ST_NAME_MAX) {
                rc = ag_error_set(err, AG_ELIMIT,
                                  "%s: tensor name of %zu bytes exceeds the cap "
                                  "of %u bytes",
                                  path, klen, AG_ST_NAME_MAX);
                goto fail;
            }
            ag_tensor_info *t = &st->tensors[st->count];
            if ((rc = parse_entry(path, k, v, st->data_size, t, err)) != AG_OK)
                goto fail;
            if (!(t->name = strdup(k))) {
                rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
                goto fail;
            }
            st->count++;
        }
    }
    json_decref(root);
    root = NULL;

    /* ascending offset; then no overlaps */
    qsort(st->tensors, st->count, sizeof *st->tensors, cmp_offset);
    for (size_t i = 1; i < st->count; i++) {
        const ag_tensor_info *a = &st->tensors[i - 1], *b = &st->tensors[i];
        if (b->offset < a->offset + a->nbytes) {
            rc = ag_error_set(err, AG_EFORMAT,
                              "%s: tensors '" NAME_FMT "' [%zu, %zu] and '" NAME_FMT
                              "' [%zu, %zu] overlap",
                              path, a->name, a->offset, a->offset + a->nbytes,
                              b->name, b->offset, b->offset + b->nbytes);
            goto fail;
        }
    }
    for (size_t i = 0; i < st->count; i++) {
        st->tensors[i].offset += st->data_start;
        st->by_name[i] = i;
    }
    sort_base = st->tensors;
    qsort(st->by_name, st->count, sizeof *st->by_name, cmp_name_idx);
    sort_base = NULL;

    if (nmeta) {
        st->meta_keys = calloc(nmeta, sizeof(char *));
        st->meta_values = calloc(nmeta, sizeof(char *));
        if (!st->meta_keys || !st->meta_values) {
            rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
            goto fail;
        }
        for (size_t i = 0; i < nmeta; i++) {
            st->meta_keys[i] = meta[i].key;
            st->meta_values[i] = meta[i].value;
        }
        st->nmeta = nmeta;
        free(meta);
        meta = NULL;
        nmeta = 0;
    }

    if (st->data_size > 0) {
        void *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            rc = ag_error_set(err, AG_EIO, "%s: cannot map the file: %s", path,
                              strerror(errno));
            goto fail;
        }
        st->map = m;
        st->map_len = size;
    }
    close(fd);
    *out = st;
    return AG_OK;

fail:
    if (meta) {
        for (size_t i = 0; i < nmeta; i++) {
            free(meta[i].key);
            free(meta[i].value);
        }
        free(meta);
    }
    json_decref(root);
    free(hdr);
    ag_st_close(st);
    if (fd >= 0)
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
