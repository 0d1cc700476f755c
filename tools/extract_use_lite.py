#!/usr/bin/env python3
"""Extract the attention Q|K|V kernels and biases of USE-lite's two layers
from the full model.safetensors (27 MB) into a small safetensors file
(about 3.9 MB) for tests/engine/test_attention_layer.c.

The tensors keep their names, dtypes, shapes and bytes exactly (F32
[1,1,d,3d] kernels, [3d] biases); only these 4 tensors are written.
Standard library only (no numpy, no safetensors package).

Usage: tools/extract_use_lite.py SRC/model.safetensors [DST.safetensors]
       (SRC is use-lite's model.safetensors; DST defaults to
        tests/data/use-lite/qkv.safetensors)
"""
import json
import struct
import sys

PFX_K = "module/Encoder_en/KonaTransformer/Encode/Layer_%d/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0"
PFX_B = "module_apply_default/Encoder_en/KonaTransformer/Encode/Layer_%d/TransformerLayer/MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat"
NAMES = [PFX_K % 0, PFX_B % 0, PFX_K % 1, PFX_B % 1]


def read_header(f):
    n = struct.unpack("<Q", f.read(8))[0]
    return json.loads(f.read(n)), 8 + n


def main(src, dst):
    with open(src, "rb") as f:
        header, start = read_header(f)
        out_header, blobs, off = {}, [], 0
        for name in NAMES:
            e = header[name]
            b, end = e["data_offsets"]
            f.seek(start + b)
            blob = f.read(end - b)
            assert len(blob) == end - b, name
            out_header[name] = {"dtype": e["dtype"], "shape": e["shape"],
                                "data_offsets": [off, off + len(blob)]}
            blobs.append(blob)
            off += len(blob)
    out_header["__metadata__"] = {"source": "USE-lite model.safetensors (qkv tensors of layers 0 and 1)"}
    h = json.dumps(out_header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)  # data area 8-byte aligned, as the source file
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for blob in blobs:
            f.write(blob)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: extract_use_lite.py SRC/model.safetensors [DST.safetensors]")
    main(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else "tests/data/use-lite/qkv.safetensors")
