#!/usr/bin/env python3
"""A corpus table with pandas: attngeom's metrics of every head on every
line of a text file, one DataFrame, then per-layer statistics two ways:
pandas' groupby, and attngeom.aggregate (the Student-t intervals of
`attngeom aggregate`). Needs Debian's python3-pandas.

    PYTHONPATH=python python3 examples/python/table.py [MODEL [TEXTS.txt]]
"""

import sys
from pathlib import Path

import attngeom

ROOT = Path(__file__).resolve().parents[2]
CORPUS = [
    "In the beginning God created the heaven and the earth.",
    "And the earth was without form, and void.",
    "And God said, Let there be light: and there was light.",
    "The quick brown fox jumps over the lazy dog.",
]


def main():
    try:
        import pandas as pd
    except ImportError:
        sys.exit("table.py: needs pandas (Debian: apt-get install python3-pandas)")
    model = attngeom.Model(sys.argv[1] if len(sys.argv) > 1 else ROOT / "models" / "tiny-gpt2")
    texts = Path(sys.argv[2]).read_text().splitlines() if len(sys.argv) > 2 else CORPUS
    frames = [model.analyze(t, "entropy_mean,sink_mass,prev_token_mass,effective_rank",
                            text=i, to_pandas=True)
              for i, t in enumerate(texts) if t.strip()]
    df = pd.concat(frames, ignore_index=True)
    print("%d records: %d texts x %d layers x %d heads\n" % (
        len(df), len(frames), model.config["n_layer"], model.config["n_head"]))
    keys = ["entropy_mean", "sink_mass", "prev_token_mass", "effective_rank"]
    print(df.groupby("layer")[keys].mean().to_string(float_format="%.4f"))
    agg = attngeom.aggregate(df, by="layer", to_pandas=True)
    print("\nentropy_mean per layer, 95% Student-t interval (attngeom.aggregate):")
    print(agg[["layer", "n", "entropy_mean", "entropy_mean_ci_low", "entropy_mean_ci_high"]]
          .to_string(index=False, float_format="%.4f"))


if __name__ == "__main__":
    main()
