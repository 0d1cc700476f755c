/* audio.c — sound files through libsndfile, as `soundfile.read` gives them
 * to Hugging Face's feature extractor (float64 from sf_readf_double with
 * libsndfile's normalisation, then cast to float32 by
 * WhisperFeatureExtractor.__call__). docs/audio.md, "Reading sound files".
 *
 * libsndfile accepts a WAV file whose data chunk claims more bytes than
 * the file holds, silently reading what is there; a file cut short in
 * transfer must not pass for a shorter sound, so the RIFF/RF64 chunks are
 * walked here first and such a file is refused. */
#include <math.h>
#include <sndfile.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attngeom/audio.h"
#include "io/io_internal.h"

#define RIFF_CHUNKS_MAX 4096      /* chunks walked before the data chunk */
#define READ_BLOCK 4096           /* samples converted at a time */

/* ---- the data chunk of a RIFF / RF64 file ----------------------------------- */

typedef struct {
    int known;                    /* 0: not RIFF/RF64, or no size to trust */
    uint64_t declared;            /* bytes the data chunk says it holds */
    uint64_t offset;              /* where its bytes begin */
} data_chunk;

/* Walk the chunks after "RIFF size WAVE" (or RF64, EBU Tech 3306, where the
 * real sizes are in the ds64 chunk) up to "data". A plain RIFF data size of
 * 0xFFFFFFFF is the streaming convention (length unknown): not checked.
 * Anything this walk does not understand is left to libsndfile. */
static data_chunk find_data_chunk(int fd, uint64_t fsize)
{
    data_chunk d = {0};
    unsigned char h[12];
    if (agi_pread_full(fd, h, 12, 0) != 0 || memcmp(h + 8, "WAVE", 4) != 0)
        return d;
    int rf64 = memcmp(h, "RF64", 4) == 0;
    if (!rf64 && memcmp(h, "RIFF", 4) != 0)
        return d;
    uint64_t pos = 12, ds64_data = 0;
    int have_ds64 = 0;
    for (int k = 0; k < RIFF_CHUNKS_MAX && pos + 8 <= fsize; k++) {
        unsigned char c[8 + 16];
        if (agi_pread_full(fd, c, 8, (size_t)pos) != 0)
            return d;
        uint64_t size = agi_le32(c + 4);
        if (rf64 && memcmp(c, "ds64", 4) == 0 && size >= 16 && pos + 24 <= fsize &&
            agi_pread_full(fd, c + 8, 16, (size_t)pos + 8) == 0) {
            ds64_data = agi_le64(c + 16); /* riffSize, then dataSize */
            have_ds64 = 1;
        }
        if (memcmp(c, "data", 4) == 0) {
            if (size == 0xFFFFFFFFu && !(rf64 && have_ds64))
                return d;
            d.known = 1;
            d.declared = size == 0xFFFFFFFFu ? ds64_data : size;
            d.offset = pos + 8;
            return d;
        }
        pos += 8 + size + (size & 1);
    }
    return d;
}

/* ---- reading ----------------------------------------------------------------- */

/* The checks that need only the header: channels, rate, length, and the
 * declared data size against the file's. */
static int check_header(const char *path, const SF_INFO *info, int sample_rate, data_chunk d,
                        uint64_t fsize, ag_error *err)
{
    if (d.known && d.declared > fsize - d.offset)
        return ag_error_set(err, AG_EFORMAT, "%s: truncated: its data chunk declares %llu bytes, "
                            "the file holds %llu", path, (unsigned long long)d.declared,
                            (unsigned long long)(fsize - d.offset));
    if (info->channels != 1)
        return ag_error_set(err, AG_EUNSUPPORTED, "%s: %d channels; Whisper needs mono audio "
                            "(no downmix is done: e.g. sox IN -c 1 OUT.wav)", path, info->channels);
    if (info->samplerate != sample_rate)
        return ag_error_set(err, AG_EUNSUPPORTED, "%s: sample rate %d Hz; Whisper needs %d Hz "
                            "(no resampling is done: e.g. sox IN -r %d OUT.wav)", path,
                            info->samplerate, sample_rate, sample_rate);
    if (info->frames <= 0)
        return ag_error_set(err, AG_EFORMAT, "%s: has no samples", path);
    return AG_OK;
}

/* want samples as float64 (libsndfile's normalisation), each cast to
 * float32 as the feature extractor does; a short read is a truncated file. */
static int read_samples(const char *path, SNDFILE *sf, float *dst, size_t want, ag_error *err)
{
    double block[READ_BLOCK];
    for (size_t done = 0; done < want;) {
        size_t m = want - done < READ_BLOCK ? want - done : READ_BLOCK;
        sf_count_t got = sf_readf_double(sf, block, (sf_count_t)m);
        if (got <= 0 || sf_error(sf) != SF_ERR_NO_ERROR)
            return ag_error_set(err, AG_EFORMAT, "%s: truncated or corrupt: read %zu of %zu "
                                "samples (%s)", path, done, want, sf_strerror(sf));
        for (size_t j = 0; j < (size_t)got; j++) {
            if (!isfinite(block[j]))
                return ag_error_set(err, AG_ENONFINITE, "%s: sample %zu is not finite",
                                    path, done + j);
            dst[done + j] = (float)block[j];
        }
        done += (size_t)got;
    }
    return AG_OK;
}

int ag_audio_read(const char *path, int sample_rate, size_t max_samples, ag_audio *out,
                  ag_error *err)
{
    if (!out)
        return ag_error_set(err, AG_EINVAL, "ag_audio_read: no output");
    *out = (ag_audio){0};
    if (!path)
        return ag_error_set(err, AG_EINVAL, "ag_audio_read: no path");
    if (sample_rate <= 0 || max_samples == 0 || max_samples > AG_AUDIO_SAMPLES_MAX)
        return ag_error_set(err, AG_EINVAL, "%s: sample rate %d or sample cap %zu is out of range "
                            "(cap 1..%u)", path, sample_rate, max_samples, AG_AUDIO_SAMPLES_MAX);
    int fd;
    struct stat st;
    int rc = agi_open_input(path, &fd, &st, err);
    if (rc != AG_OK)
        return rc;
    uint64_t fsize = (uint64_t)st.st_size;
    data_chunk d = find_data_chunk(fd, fsize);
    /* what the file looks like, read before libsndfile, which may close fd
     * when it fails: a file of a kind attngeom knows is named for it */
    unsigned char head[256];
    ssize_t n = pread(fd, head, sizeof head, 0);
    ag_file_kind kind = n > 0 ? ag_file_kind_of(head, (size_t)n) : AG_FILE_UNKNOWN;
    SF_INFO info = {0};
    SNDFILE *sf = sf_open_fd(fd, SFM_READ, &info, 0);
    if (!sf) {
        /* sf_strerror(NULL): libsndfile's last open error, a global of its own */
        if (kind != AG_FILE_UNKNOWN && kind != AG_FILE_WAV)
            rc = ag_error_set(err, AG_EFORMAT, "%s: not a sound file: it is %s", path,
                              ag_file_kind_name(kind));
        else
            rc = ag_error_set(err, AG_EFORMAT, "%s: not a sound file libsndfile can read (%s)",
                              path, sf_strerror(NULL));
        close(fd);
        return rc;
    }
    rc = check_header(path, &info, sample_rate, d, fsize, err);
    size_t want = 0;
    float *buf = NULL;
    if (rc == AG_OK) {
        want = (uint64_t)info.frames < max_samples ? (size_t)info.frames : max_samples;
        buf = malloc(want * sizeof *buf);
        if (!buf)
            rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory for %zu samples", path, want);
    }
    if (rc == AG_OK)
        rc = read_samples(path, sf, buf, want, err);
    sf_close(sf);
    close(fd);
    if (rc != AG_OK) {
        free(buf);
        return rc;
    }
    *out = (ag_audio){.samples = buf, .n = want, .n_file = (uint64_t)info.frames,
                      .sample_rate = info.samplerate};
    return AG_OK;
}

void ag_audio_free(ag_audio *a)
{
    if (!a)
        return;
    free(a->samples);
    *a = (ag_audio){0};
}
