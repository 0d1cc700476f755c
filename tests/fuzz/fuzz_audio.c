/* fuzz_audio.c — ag_audio_read on arbitrary bytes (WAV, RF64 and whatever
 * else libsndfile recognises), then Whisper's features of what was read. */
#include <stdint.h>
#include <stdlib.h>

#include "attngeom.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[600];
    if (!path[0])
        fz_path("input.wav", path, sizeof path);
    fz_write(path, data, size);

    ag_audio a;
    ag_error err = {0};
    int rc = ag_audio_read(path, 16000, 480000, &a, &err);
    if (rc == AG_OK) {
        if (a.n == 0 || a.n > 480000 || a.n > a.n_file)
            abort();
        ag_whisper_features f;
        if (ag_whisper_features_from_samples(NULL, a.samples, a.n, 2, &f, &err) != AG_OK ||
            f.frames != 2 || f.n_mels != 80)
            abort(); /* finite samples always give features */
        ag_whisper_features_free(&f);
    } else if (err.status != rc || !err.message[0]) {
        abort(); /* every failure carries its status and a message */
    }
    ag_audio_free(&a);
    return 0;
}
