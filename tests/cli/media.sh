#!/bin/sh
# tests/cli/media.sh CLI — the command line's image and audio inputs
# (docs/cli.md, "Images and audio"); their values against the references
# are tests/ref/check_media_cli.py's (make ref-test). Here: every command
# runs on tiny-vit and tiny-whisper (analyze, attention, residual, rollout,
# similarity, weights, info; analyze, weights and info on tiny-dinov2-reg) with values checked where a closed form
# exists; records name the input; -j 1, 2 and 3 give the same bytes on an
# image list and an audio list; bad images and sound files (truncated PNG,
# JPEG and WAV, an 8 kHz WAV, an empty and a zero-byte WAV, a PNG claiming
# huge dimensions, a list naming a missing file) give exactly one stderr
# line naming the file, exit 1, and leave -o and --save-input untouched;
# usage errors for options of the other kind; plot --kind patches,
# --grid and --registers. Run from the repository root.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
VIT=$ROOT/tests/data/models/tiny-vit
WH=$ROOT/tests/data/models/tiny-whisper
IMG=$ROOT/tests/data/images
AUD=$ROOT/tests/data/audio
need "$VIT/config.json" "$WH/config.json" "$IMG/rgb8_37x23.png" "$AUD/chirp_1s.wav"
cd "$T" || exit 1

# Bad files, made here: truncated PNG and JPEG, a PNG whose IHDR (with a
# valid CRC) claims 100000 x 100000 pixels, a zero-byte WAV.
"$PY" - "$IMG" <<'EOF' || { echo "media.sh: could not make test files" >&2; exit 1; }
import struct, sys, zlib
img = sys.argv[1]
png = open(img + "/rgb8_160x120.png", "rb").read()
open("trunc.png", "wb").write(png[:len(png) // 2])
jpg = open(img + "/rgb420_40x30.jpg", "rb").read()
open("trunc.jpg", "wb").write(jpg[:len(jpg) // 2])
ihdr = b"IHDR" + struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)
open("huge.png", "wb").write(b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + ihdr +
                             struct.pack(">I", zlib.crc32(ihdr)) + b"\0" * 64)
open("zero.wav", "wb").close()
EOF
printf '%s\n' "$IMG/rgb8_37x23.png" "$IMG/gray8_40x30.png" "" "$IMG/pal8_35x25.png" \
    "$IMG/rgb444_33x17.jpg" "$IMG/graya16_21x15.png" >images.txt
printf '%s\n' "$AUD/chirp_1s.wav" "$AUD/tone_pcm24.wav" "$AUD/tones_noise_3p7s.wav" >audio.txt

# ---- every command on both ---------------------------------------------------
PYSCRIPT='
recs = records(a[0]); L, H, inputs = int(a[1]), int(a[2]), a[3:]
assert len(recs) == L * H * len(inputs), (len(recs), L, H, len(inputs))
assert [r["input"] for r in recs] == [i for i in inputs for _ in range(L * H)], "input column"
for r in recs:
    assert r["rows"] == r["cols"]
    if "row_sum_error" in r:
        assert r["row_sum_error"] < 1e-12, r["row_sum_error"]
'
runj vit.json analyze "$VIT" --image-file images.txt --precision f64 --format json
pycheck "analyze --image-file: records, input column, rows sum to 1" vit.json 2 4 \
    "$IMG/rgb8_37x23.png" "$IMG/gray8_40x30.png" "$IMG/pal8_35x25.png" "$IMG/rgb444_33x17.jpg" \
    "$IMG/graya16_21x15.png"
runj wh.json analyze "$WH" --audio-file audio.txt --frames 60 --precision f64 --format json
pycheck "analyze --audio-file: records, input column, rows sum to 1" wh.json 2 4 \
    "$AUD/chirp_1s.wav" "$AUD/tone_pcm24.wav" "$AUD/tones_noise_3p7s.wav"
runj vit1.json analyze "$VIT" --image "$IMG/rgb8_37x23.png" --metrics all --precision f64 --format json
pycheck "analyze --metrics all on tiny-vit: 17 positions, CLS and 4 x 4 patches" vit1.json 2 4 \
    "$IMG/rgb8_37x23.png"
runj wh1.json analyze "$WH" --audio "$AUD/chirp_1s.wav" --frames 40 --metrics all --precision f64 \
    --format json
pycheck "analyze --metrics all on tiny-whisper" wh1.json 2 4 "$AUD/chirp_1s.wav"
PYSCRIPT='
for p, n in zip(a[0::2], a[1::2]):
    rs = records(p)
    assert rs and all(r["rows"] == int(n) for r in rs), (p, n, [r["rows"] for r in rs])
'
pycheck "positions: ViT 1 + 4·4, Whisper --frames 40 -> 20" vit1.json 17 wh1.json 20

# residual: L + 1 hidden states per input, d = 32 columns, the input named;
# rollout: the last layer's rollout rows sum to 1 (it is a product of
# row-stochastic matrices)
runj res.csv residual "$WH" --audio "$AUD/chirp_1s.wav" --frames 40 --format csv
check "residual on tiny-whisper: 3 hidden states of 20 x 32, input column" \
    test "$(cut -d, -f1-4 res.csv | tr '\n' ' ')" = "layer,head,rows,cols 0,-1,20,32 1,-1,20,32 2,-1,20,32 "
check "residual: the input named in every record" test "$(grep -c "chirp_1s.wav" res.csv)" = 3
runj roll.json rollout "$VIT" --image "$IMG/rgb8_37x23.png" --precision f64 -o roll.npy --format json
PYSCRIPT='
R = np.load(a[0]); assert R.shape == (2, 17, 17), R.shape
assert np.abs(R.sum(axis=-1) - 1).max() < 1e-12
assert len(records(a[1])) == 2 and all(r["input"].endswith("rgb8_37x23.png") for r in records(a[1]))
'
pycheck "rollout -o on tiny-vit: rows of R sum to 1" roll.npy roll.json
runj sim.json similarity "$VIT" --image-file images.txt --format json -o sim.npy
PYSCRIPT='
S = np.load(a[0]); assert S.shape == (8, 8) and np.allclose(S, S.T) and np.all(np.diag(S) == 0)
assert S.min() >= 0 and S.max() <= 1, (S.min(), S.max())
'
pycheck "similarity over an image list: symmetric, zero diagonal, in [0, 1]" sim.npy
runj w.json weights "$WH" --format json
PYSCRIPT='assert len(records(a[0])) == 8'
pycheck "weights on tiny-whisper: 2 x 4 heads" w.json
runj info.txt info "$VIT"
check "info shows the input kind, shape and patch grid" \
    grep -q "input_shape *\[3, 32, 32\]" info.txt
check "info: patch grid" grep -q "patch_grid *4x4" info.txt
REG=$ROOT/tests/data/models/tiny-dinov2-reg
runj infor.txt info "$REG"
check "info on DINOv2 with registers: 3 registers, rows 1..3" \
    grep -q "token_layout *0 \[CLS\], 1..3 registers \[REG0\]..\[REG2\]" infor.txt
check "info: registers 3, 20 tokens" grep -q "registers *3" infor.txt
runj reg.json analyze "$REG" --image "$IMG/rgb8_37x23.png" --metrics all --format json
PYSCRIPT='rs = records(a[0])
assert len(rs) == 8 and all(r["rows"] == 20 and r["row_sum_error"] < 1e-5 for r in rs), rs[0]'
pycheck "analyze --metrics all on DINOv2 with registers: 8 heads of 1 + 3 + 16 rows" reg.json
runj regw.json weights "$REG" --format json
PYSCRIPT='assert len(records(a[0])) == 8'
pycheck "weights on DINOv2 with registers: 2 x 4 heads" regw.json
runj infow.txt info "$WH"
check "info on whisper: features [80, 1..3000]" grep -q "input_shape *\[80, 1..3000\]" infow.txt

# --aggregate: one group per (layer, head), "input" pooled like "text"
runj agg.json analyze "$VIT" --image-file images.txt --aggregate --format json
PYSCRIPT='
rs = records(a[0]); assert len(rs) == 8, len(rs)
assert all(r["n"] == 5 and "input" not in r and "text" not in r for r in rs)
'
pycheck "analyze --aggregate over an image list: 8 groups of 5" agg.json

# --save-input of one input; -o and --save-input land only on success
runj s.txt attention "$VIT" --image "$IMG/rgb8_37x23.png" -o a.npy --save-input in.npy
PYSCRIPT='
x = np.load(a[0]); assert x.dtype == np.float32 and x.shape == (3, 32, 32)
assert np.load(a[1]).shape == (2, 4, 17, 17)
'
pycheck "attention --save-input: float32 [3, 32, 32]" in.npy a.npy

# ---- the same bytes for any -j ---------------------------------------------------
for j in 1 2 3; do
    "$CLI" analyze "$VIT" --image-file images.txt --format jsonl -j $j >"vit_j$j.jsonl" 2>&1
    "$CLI" analyze "$WH" --audio-file audio.txt --frames 80 --format csv -j $j >"wh_j$j.csv" 2>&1
    "$CLI" attention "$VIT" --image-file images.txt -o "att_j${j}_{i}.npy" -j $j
done
for j in 2 3; do
    check "-j $j: analyze --image-file, the same bytes as -j 1" cmp -s vit_j1.jsonl "vit_j$j.jsonl"
    check "-j $j: analyze --audio-file, the same bytes as -j 1" cmp -s wh_j1.csv "wh_j$j.csv"
    for i in 0 1 3 4 5; do
        check "-j $j: attention att_{i}.npy of line $i, the same bytes" cmp -s "att_j1_$i.npy" "att_j${j}_$i.npy"
    done
done

# ---- bad files: one line naming the file, exit 1, nothing written --------------
KEEP=keep.csv
run_case 1 "trunc.png" "a truncated PNG" analyze "$VIT" --image trunc.png -o o/keep.csv
run_case 1 "trunc.jpg" "a truncated JPEG" analyze "$VIT" --image trunc.jpg -o o/keep.csv --save-input o/in.npy
run_case 1 "huge.png" "a PNG claiming 100000 x 100000 pixels" analyze "$VIT" --image huge.png -o o/keep.csv
run_case 1 "truncated.wav" "a truncated WAV" analyze "$WH" --audio "$AUD/truncated.wav" -o o/keep.csv
run_case 1 "rate_8k.wav" "an 8 kHz WAV" analyze "$WH" --audio "$AUD/rate_8k.wav" -o o/keep.csv \
    --save-input o/in.npy
run_case 1 "empty.wav" "a WAV without samples" analyze "$WH" --audio "$AUD/empty.wav" -o o/keep.csv
run_case 1 "zero.wav" "a zero-byte WAV" analyze "$WH" --audio zero.wav -o o/keep.csv
printf '%s\n' "$IMG/rgb8_37x23.png" "$T/missing.png" >missing.txt
run_case 1 "missing.png" "a list naming a missing file" analyze "$VIT" --image-file missing.txt -o o/keep.csv
printf '%s\n' "$AUD/chirp_1s.wav" "$AUD/stereo.wav" >stereo.txt
run_case 1 "stereo.wav" "a list naming a stereo WAV" analyze "$WH" --audio-file stereo.txt -o o/keep.csv
run_case 1 "trunc.png" "attention on a truncated PNG" attention "$VIT" --image trunc.png -o o/keep.csv
run_case 1 "the matrix|tokens" "plot --kind patches: a grid that does not fit" \
    plot a.npy --kind patches --grid 3x4 -o o/keep.svg
unset KEEP

# ---- usage errors ------------------------------------------------------------
run_case 2 "vit model|--text" "--text on a ViT" analyze "$VIT" --text hello
run_case 2 "gpt2 model|--image" "--image on GPT-2" analyze "$GPT2" --image "$IMG/rgb8_37x23.png"
run_case 2 "whisper model|--image" "--image on Whisper" analyze "$WH" --image "$IMG/rgb8_37x23.png"
run_case 2 "vit model|--audio" "--audio on a ViT" analyze "$VIT" --audio "$AUD/chirp_1s.wav"
run_case 2 "--frames" "--frames on an image" analyze "$VIT" --image "$IMG/rgb8_37x23.png" --frames 8
run_case 2 "--frames" "--frames 0" analyze "$WH" --audio "$AUD/chirp_1s.wav" --frames 0
run_case 2 "--frames" "--frames 3001" analyze "$WH" --audio "$AUD/chirp_1s.wav" --frames 3001
run_case 2 "--save-input" "--save-input with a list" analyze "$VIT" --image-file images.txt \
    --save-input o/x.npy
run_case 2 "--save-input" "--save-input on a token model" analyze "$GPT2" --text hi --save-input o/x.npy
run_case 2 "--max-tokens" "--max-tokens on an image" analyze "$VIT" --image "$IMG/rgb8_37x23.png" \
    --max-tokens 4
run_case 2 "--skip-long" "--skip-long on audio" analyze "$WH" --audio "$AUD/chirp_1s.wav" --skip-long
run_case 2 "only one" "two inputs" analyze "$VIT" --image "$IMG/rgb8_37x23.png" --pixels x.npy
run_case 2 "vit model" "tokenize on a ViT" tokenize "$VIT" --text hi
run_case 2 "whisper model" "tokenize on Whisper" tokenize "$WH" --text hi
run_case 2 "one input" "rollout -o with an image list" rollout "$VIT" --image-file images.txt -o o/r.npy
run_case 1 "same file" "--save-input over the input" analyze "$VIT" --pixels in.npy --save-input in.npy
run_case 1 "--save-input" "--save-input - with the records on standard output" analyze "$VIT" \
    --image "$IMG/rgb8_37x23.png" --save-input -
"$CLI" analyze "$WH" --audio "$AUD/chirp_1s.wav" --frames 30 --save-input feat30.npy -o o/f30.csv 2>/dev/null
run_case 1 "feat30.npy" "more --frames than the features hold" analyze "$WH" --features feat30.npy --frames 31

# ---- plot: the patch grid ---------------------------------------------------------
# The labels are checked in the PDF's text when poppler's pdftotext is
# installed; the figures differ from the unlabelled one in any case.
pdf_has() {
    f=$1
    shift
    command -v pdftotext >/dev/null 2>&1 || return 0
    pdftotext -layout "$f" "$f.txt" 2>/dev/null || { fail "pdftotext $f failed"; return; }
    for s in "$@"; do
        grep -qF -- "$s" "$f.txt" || fail "the text of $f lacks '$s'"
    done
}
runj p.txt plot a.npy --kind patches --layer 1 --head 2 -o patches.pdf
check "plot --kind patches: a 4 x 4 grid from the CLS query"
pdf_has patches.pdf "layer 1, head 2: CLS" "patch row" "patch column"
runj g.txt plot a.npy --kind attention --grid 4x4 -o grid.pdf
runj g0.txt plot a.npy --kind attention -o plain.pdf
check "plot --kind attention --grid: CLS and (r,c) labels"
cmp -s grid.pdf plain.pdf && fail "--grid changed nothing"
pdf_has grid.pdf "CLS" "(0,0)" "(3,3)"
runj q.txt plot a.npy --kind patches --query 6 -o q.pdf
check "plot --kind patches --query 6: patch (1,1)"
pdf_has q.pdf "patch (1,1)"
# DINOv2 with registers: CLS, 3 registers, then the 4 x 4 patches
"$CLI" attention "$REG" --image "$IMG/rgb8_37x23.png" -o reg.npy 2>/dev/null
runj rg.txt plot reg.npy --kind attention --registers 3 -o rgrid.pdf
check "plot --kind attention --registers 3: CLS, [REG0].., (r,c) labels"
pdf_has rgrid.pdf "CLS" "[REG0]" "[REG2]" "(0,0)" "(3,3)"
runj rp.txt plot reg.npy --kind patches --registers 3 --query 2 -o rp.pdf
check "plot --kind patches --registers 3 --query 2: a register's row, the registers' weight"
pdf_has rp.pdf "[REG1]" "registers"
runj rp5.txt plot reg.npy --kind patches --registers 3 --query 5 --grid 4x4 -o rp5.pdf
check "plot --kind patches --registers 3 --query 5: patch (0,1)"
pdf_has rp5.pdf "patch (0,1)"
run_case 1 "--registers" "plot --kind patches on 1 + 3 + 16 tokens without --registers" \
    plot reg.npy --kind patches -o o/keep.svg
run_case 2 "--registers" "--registers on another kind" plot reg.npy --kind spectrum --registers 3 -o o/keep.svg
finish
