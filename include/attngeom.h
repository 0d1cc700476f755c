/* attngeom.h — the public API of attngeom, a toolkit that measures the
 * geometry of attention in trained transformers.
 *
 * Modules (one header each, all included here):
 *   attngeom/core.h     version, exports and the ABI rule, status codes,
 *                       ag_error, the dense ag_array
 *   attngeom/io.h       .npy and safetensors readers/writers
 *   attngeom/metrics.h  metric keys, selections, records, families A–C,
 *                       the value norms of family H, output
 *   attngeom/tokenizer.h  Hugging Face tokenizers (byte-level BPE, WordPiece)
 *   attngeom/model.h    model folders, the forward pass, the generic layer
 *   attngeom/stability.h   stability and angles of a head (docs/metrics.md, family E)
 *   attngeom/curvature.h   curvature of the attention graph (docs/metrics.md, family F)
 *   attngeom/layers.h   rollout and the residual stream across layers (§3 G),
 *                       its massive activations (family I)
 *   attngeom/contributions.h  residual- and norm-aware contributions, ALTI
 *   attngeom/records.h  records with any keys: tables, every output format,
 *                       reading JSON/JSONL/CSV records back
 *   attngeom/aggregate.h   corpus statistics: means with Student-t
 *                       intervals, shard merging, Welch comparisons
 *   attngeom/plot.h     figures (SVG, PDF, PNG with cairo): grids, lines,
 *                       bars (the lens figure)
 *   attngeom/parallel.h a pool of threads for heads, layers and texts, with
 *                       results that do not depend on the thread count
 *   attngeom/access.h   the library without struct layouts: opaque heap
 *                       objects and getters, for bindings (docs/python.md)
 *   attngeom/audio.h    sound files (libsndfile) and Whisper's log-mel input
 *                       features as Hugging Face computes them (docs/audio.md)
 *   attngeom/image.h    PNG/JPEG images and ViT/BiT/CLIP image preprocessing
 *                       (docs/vision.md)
 *   attngeom/normalizers.h  one row of scores under softmax at a temperature,
 *                       sparsemax, entmax, and linear attention (issue 28)
 *   attngeom/run.h      the run module: which layers and heads a run
 *                       computes (selections from "0,2-3" or index lists)
 *
 * Ownership, in one place: the library never prints and never exits; every
 * fallible function returns an int status (AG_OK = 0) and, given an ag_error,
 * a one-line message naming the file or tensor at fault. Pointers passed in
 * are borrowed for the duration of the call. Objects handed out through an
 * `out` parameter belong to the caller and are released with the matching
 * *_free / *_close function, which accept NULL or zeroed objects.
 *
 * The exact definitions of every metric are in docs/metrics.md (and docs/cli.md
 * the commands, formats and exit codes).
 */
#ifndef ATTNGEOM_H
#define ATTNGEOM_H

#include "attngeom/core.h"
#include "attngeom/io.h"
#include "attngeom/metrics.h"
#include "attngeom/tokenizer.h"
#include "attngeom/model.h"
#include "attngeom/stability.h"
#include "attngeom/curvature.h"
#include "attngeom/layers.h"
#include "attngeom/contributions.h"
#include "attngeom/records.h"
#include "attngeom/aggregate.h"
#include "attngeom/plot.h"
#include "attngeom/parallel.h"
#include "attngeom/access.h"
#include "attngeom/audio.h"
#include "attngeom/image.h"
#include "attngeom/normalizers.h"
#include "attngeom/run.h"

#endif
