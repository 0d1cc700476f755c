#!/usr/bin/python3
"""The generator cases.txt was expanded from, once (run from the repository
root: /usr/bin/python3 tests/golden/make_cases.py). cases.txt is what
golden.sh reads; editing it directly is fine. If you change this file
instead, rerun it and check that only the cases you meant changed
(git diff tests/golden/cases.txt), then GOLDEN_UPDATE=1."""
F = "table json jsonl csv tsv md latex".split()
IN = {
    "G": "$G --tokens 464,2068,7586,21831,18045,625,262,16931,3290",
    "B": "$B --tokens 2,142,3879,926,240,142,1183,130,3",
    "GE": "$GE --tokens 77,19,60,84,49,82,67,91,35,62,63,82",
    "RO": "$RO --tokens 27,63,76,20,25,47,53,63,33,79,13,58",
    "V": "$V --image tests/data/images/rgb8_37x23.png",
    "W": "$W --audio tests/data/audio/chirp_1s.wav --frames 40",
}
MOD = {"G": "$G", "B": "$B", "GE": "$GE", "RO": "$RO", "V": "$V", "W": "$W"}
out = []
def c(id, flags, args):
    assert " " not in id
    out.append("%s %s %s" % (id, flags or "-", args))
def sec(title):
    out.append("")
    out.append("# ---- " + title)

sec("1. models x commands x formats")
for m in IN:
    for cmd in ("analyze", "residual", "rollout", "similarity", "weights"):
        for f in F:
            a = MOD[m] if cmd == "weights" else IN[m]
            c("%s.%s.%s" % (m, cmd, f), "j" if f == "json" else "", "%s %s --format %s" % (cmd, a, f))
    c("%s.attention" % m, "j", "attention %s -o $O/a.npy --hidden $O/h.npy" % IN[m])

sec("2. options")
for m in IN:
    c("%s.analyze.all" % m, "j", "analyze %s --metrics all --format json" % IN[m])
    c("%s.analyze.f64" % m, "j", "analyze %s --precision f64 --format csv" % IN[m])
for m in ("G", "GE"):
    for cmd in ("analyze", "similarity", "weights"):
        a = MOD[m] if cmd == "weights" else IN[m]
        c("%s.%s.sel" % (m, cmd), "", "%s %s --layers 1-2 --heads 0,2 --format csv" % (cmd, a))
    c("%s.attention.sel" % m, "", "attention %s --layers 1-2 --heads 0,2 -o $O/a.npy" % IN[m])
c("G.residual.layers", "", "residual %s --layers 0,4 --format csv" % IN["G"])
c("G.rollout.layers", "", "rollout %s --layers 1-2 --format csv" % IN["G"])
c("G.analyze.curv", "", "analyze %s --metrics curvature --edge-threshold 0.2 --format csv" % IN["G"])
c("G.analyze.stab", "j", "analyze %s --epsilon 1e-2 --trials 3 --seed 7 --metrics stability --format csv" % IN["G"])
c("G.analyze.label", "", "analyze %s --label X --format jsonl" % IN["G"])
for m in ("G", "V"):
    c("%s.rollout.o" % m, "m" if m == "G" else "", "rollout %s -o $O/R.npy --format csv" % IN[m])
for m in ("G", "RO"):
    c("%s.similarity.o" % m, "", "similarity %s -o $O/S.npy --format csv" % IN[m])
c("G.attention.corpus", "j", "attention $G --tokens-file $D/gpt2_ids.txt -o \"$O/a_{i}.npy\" --hidden \"$O/h_{i}.npy\"")
c("G.attention.text", "", "attention $G --text-file $D/corpus.txt -o \"$O/a_{i}.npy\"")
c("V.save-input", "", "analyze %s --save-input $O/in.npy --format csv" % IN["V"])
c("W.save-input", "", "analyze %s --save-input $O/in.npy --format csv" % IN["W"])
c("V.pixels", "p", "analyze $V --pixels $O/p.npy --format csv")
c("W.features", "f", "analyze $W --features $O/f.npy --frames 40 --format csv")
c("G.text", "", "analyze $G --text 'In the beginning God created the heaven' --format csv")
c("B.text", "", "analyze $B --text 'the cat sat on the mat' --format jsonl")
c("G.analyze.o", "", "analyze %s --format json -o $O/out.json" % IN["G"])
c("G.expect.ok", "e", "analyze %s --expect $O/golden.json" % IN["G"])
c("G.expect.bad", "e", "analyze %s --layers 0 --expect $O/golden.json" % IN["G"])

sec("3. corpora and aggregate")
for m, tf in (("G", "$D/gpt2_ids.txt"), ("B", "$D/bert_ids.txt")):
    for cmd in ("analyze", "residual", "rollout", "similarity"):
        for f in ("jsonl", "json", "csv", "table"):
            c("%s.%s.textfile.%s" % (m, cmd, f), ("jm" if m == "G" else "j") if f in ("jsonl", "json") else "",
              "%s %s --text-file $D/corpus.txt --format %s" % (cmd, MOD[m], f))
        c("%s.%s.tokensfile.csv" % (m, cmd), "jm" if m == "G" or cmd == "analyze" else "j", "%s %s --tokens-file %s --format csv" % (cmd, MOD[m], tf))
c("GE.analyze.tokensfile", "jm", "analyze $GE --tokens-file $D/gemma2_ids.txt --format jsonl")
c("RO.analyze.tokensfile", "j", "analyze $RO --tokens-file $D/roberta_ids.txt --format csv")
c("G.analyze.stdin", "im", "analyze $G --text-file - --format jsonl")
c("G.residual.stdin", "i", "residual $G --text-file - --format csv")
for cmd in ("analyze", "residual", "rollout", "similarity"):
    c("V.%s.imagefile" % cmd, "jm" if cmd == "analyze" else "j", "%s $V --image-file $D/images.txt --format csv" % cmd)
    c("W.%s.audiofile" % cmd, "jm" if cmd == "residual" else "j", "%s $W --audio-file $D/audio.txt --frames 40 --format csv" % cmd)
c("V.analyze.imagefile.jsonl", "", "analyze $V --image-file $D/images.txt --format jsonl")
c("W.analyze.audiofile.json", "", "analyze $W --audio-file $D/audio.txt --frames 40 --format json")
for cmd in ("analyze", "residual", "rollout"):
    for f in ("csv", "json", "table"):
        c("G.%s.agg.%s" % (cmd, f), "m" if f == "json" else "", "%s $G --text-file $D/corpus.txt --aggregate --format %s" % (cmd, f))
c("G.weights.agg.csv", "m", "weights $G --aggregate --format csv")
c("G.weights.agg.json", "m", "weights $G --aggregate --by head --format json")
c("M.matrix.agg.csv", "", "matrix $D/A4.npy --aggregate --format csv")
c("M.matrix.agg.json", "m", "matrix $D/A4.npy --aggregate --by layer --format json")
c("G.analyze.agg.text", "m", "analyze $G --text-file $D/corpus.txt --aggregate --by text --format csv")
c("G.analyze.agg.layer", "m", "analyze $G --tokens-file $D/gpt2_ids.txt --aggregate --by layer --ci 0.9 --format json")
c("B.analyze.agg.md", "", "analyze $B --tokens-file $D/bert_ids.txt --aggregate --format md")
c("V.analyze.agg", "m", "analyze $V --image-file $D/images.txt --aggregate --format csv")
c("W.residual.agg", "m", "residual $W --audio-file $D/audio.txt --frames 40 --aggregate --format csv")
c("G.skiplong", "m", "analyze $G --text-file $D/long.txt --skip-long --format jsonl")
c("G.maxtokens", "", "analyze $G --text-file $D/long.txt --max-tokens 32 --format csv --layers 1")
c("G.attention.skiplong", "", "attention $G --text-file $D/long.txt --skip-long -o \"$O/a_{i}.npy\"")
c("G.similarity.corpus.o", "m", "similarity $G --text-file $D/corpus.txt -o $O/S.npy --format json")
c("G.analyze.corpus.o", "m", "analyze $G --tokens-file $D/gpt2_ids.txt --format jsonl -o $O/out.jsonl")

sec("4. other commands")
for f in F:
    c("M.matrix.A4.%s" % f, "jm" if f == "json" else "", "matrix $D/A4.npy --format %s" % f)
    c("M.matrix.A2.%s" % f, "", "matrix $D/A2.npy --format %s" % f)
    c("M.matrix.Ac.%s" % f, "", "matrix $D/Ac.npy --format %s" % f)
    c("M.matrix.st.%s" % f, "", "matrix $GE/model.safetensors --tensor model.embed_tokens.weight --format %s" % f)
c("M.matrix.all", "jm", "matrix $D/Ac.npy --metrics all --format jsonl")
c("M.matrix.curv", "", "matrix $D/A2.npy --metrics curvature --edge-threshold 0.2 --format csv")
c("M.matrix.label", "", "matrix $D/A2.npy --label X --format json -o $O/m.json")
LAYER = "layer --x $D/x.npy --weights $G/model.safetensors --qkv h.0.attn.c_attn.weight --qkv-bias h.0.attn.c_attn.bias --heads 4 --causal"
for f in F:
    c("L.layer.%s" % f, "j" if f == "json" else "", "%s --save-attention $O/A.npy --format %s" % (LAYER, f))
c("L.layer.all", "j", "%s --metrics all --trials 2 --format json" % LAYER)
c("L.layer.window", "j", "%s --window 4 --softcap 30 --format csv" % LAYER)
c("L.layer.f64", "", "%s --precision f64 --format csv" % LAYER)
WQK = "weights --weights $GE/model.safetensors --q model.layers.0.self_attn.q_proj.weight --k model.layers.0.self_attn.k_proj.weight --heads 4 --linear"
c("L.weights.qk.csv", "", WQK + " --format csv")
c("L.weights.qk.json", "", WQK + " --format json")
for m, t in (("G", "'In the beginning God created the heaven'"), ("B", "'the cat sat on the mat'")):
    for f in ("table", "json", "csv", "tsv", "md", "latex"):
        c("%s.tokenize.%s" % (m, f), "", "tokenize %s --text %s --format %s" % (MOD[m], t, f))
for name, p in (("G", "$G"), ("GE", "$GE"), ("V", "$V"), ("W", "$W"), ("st", "$RO/model.safetensors"), ("npy", "$D/A4.npy")):
    for f in ("table", "json", "csv"):
        c("I.info.%s.%s" % (name, f), "", "info %s --format %s" % (p, f))
for f in ("tsv", "md", "latex"):
    c("I.info.B.%s" % f, "", "info $B --format %s" % f)
for f in F:
    c("A.aggregate.%s" % f, "", "aggregate $D/h.jsonl --format %s" % f)
    c("C.compare.%s" % f, "", "compare $D/h.jsonl $D/h2.jsonl --format %s" % f)
c("A.aggregate.by", "", "aggregate $D/h.jsonl $D/h2.jsonl --by model --ci 0.8 --format csv")
c("A.aggregate.pool", "", "aggregate $D/h.jsonl --by '' --format json -o $O/agg.json")
c("C.compare.perm", "", "compare $D/h.jsonl $D/h2.jsonl --by layer --permutations 200 --seed 3 --format csv")
c("C.compare.metrics", "", "compare $D/h.jsonl $D/h2.jsonl --metrics sigma_max --format json")
for ext in ("svg", "pdf", "png"):
    c("P.heatmap.%s" % ext, "", "plot $D/h.jsonl --kind heatmap --metric sigma_max --model m0 --values -o $O/f.%s" % ext)
    c("P.depth.%s" % ext, "", "plot $D/h.jsonl --kind depth --metric entropy_mean -o $O/f.%s" % ext)
    c("P.attention.%s" % ext, "", "plot $D/A4.npy --kind attention --layer 1 --head 2 --tokens $D/tok.json -o $O/f.%s" % ext)
    c("P.spectrum.%s" % ext, "", "plot $D/A4.npy --kind spectrum -o $O/f.%s" % ext)
    c("P.similarity.%s" % ext, "", "plot $D/S.npy --kind similarity --heads-per-layer 3 -o $O/f.%s" % ext)
c("P.depth.head", "", "plot $D/h.jsonl --kind depth --by head --metric sigma_max --model m0 --title T --size 500x400 -o $O/f.svg")
for cmd in ("info", "tokenize", "analyze", "attention", "layer", "weights", "residual", "rollout",
            "similarity", "plot", "matrix", "aggregate", "compare"):
    c("H.%s" % cmd, "", "%s --help" % cmd)
c("H.main", "", "--help")
c("H.version", "", "--version")

sec("5. failing runs")
for cmd in ("info", "tokenize", "analyze", "attention", "layer", "weights", "residual", "rollout",
            "similarity", "plot", "matrix", "aggregate", "compare"):
    c("X.unknown.%s" % cmd, "", "%s --bogus" % cmd)
    c("X.noarg.%s" % cmd, "", "%s" % cmd)
c("X.nocommand", "", "frobnicate")
c("X.noargs", "", "")
c("X.residual.heads", "", "residual %s --heads 0" % IN["G"])
c("X.by.noagg", "", "analyze %s --by layer" % IN["G"])
c("X.similarity.metrics", "", "similarity %s --metrics sigma_max" % IN["G"])
c("X.frames0", "", "analyze $W --audio tests/data/audio/chirp_1s.wav --frames 0")
c("W.frames41", "", "analyze $W --audio tests/data/audio/chirp_1s.wav --frames 41")
c("X.whisper.image", "", "analyze $W --image tests/data/images/rgb8_37x23.png")
c("X.vit.tokenize", "", "tokenize $V --text hi")
c("X.vit.text", "", "analyze $V --text hi")
c("X.format", "", "analyze %s --format xml" % IN["G"])
c("X.twoinputs", "", "analyze $G --text hi --tokens 1,2")
c("X.j0", "", "matrix $D/A4.npy -j 0")
c("X.metric.unknown", "", "matrix $D/A4.npy --metrics nonsense")
c("X.layers9", "m", "analyze %s --layers 9" % IN["G"])
c("X.heads7", "", "analyze %s --heads 7" % IN["G"])
c("X.weights.layers9", "m", "weights $G --layers 9")
c("X.matrix.layers", "", "matrix $D/A4.npy --layers 9")
c("X.missing.model", "", "analyze tests/no-such-model --tokens 1,2")
c("X.missing.file", "", "matrix $D/none.npy")
c("X.nan", "", "matrix $D/nan.npy")
c("X.5d", "", "matrix $D/A5.npy")
c("X.tensor.missing", "", "matrix $G/model.safetensors --tensor nope")
c("X.o.dir", "", "analyze %s -o $O" % IN["G"])
c("X.o.nodir", "", "analyze %s -o $O/nodir/x.csv --format csv" % IN["G"])
c("X.o.input", "a", "matrix $O/A.npy -o $O/A.npy")
c("X.o.input.tokens", "a", "analyze $G --tokens-file $O/ids.txt -o $O/ids.txt")
c("X.o.kept", "k", "analyze $G --tokens-file $D/bad_ids.txt --format csv -o $O/keep.csv")
c("X.badids.jsonl", "jm", "analyze $G --tokens-file $D/bad_ids.txt --format jsonl")
c("X.badids.residual", "", "residual $G --tokens-file $D/bad_ids.txt --format csv")
c("X.long", "m", "analyze $G --text-file $D/long.txt --format csv")
c("X.maxtokens.big", "", "analyze $G --text-file $D/long.txt --max-tokens 999 --format csv")
c("X.images.bad", "j", "analyze $V --image-file $D/bad_images.txt --format jsonl")
c("X.images.bad.o", "", "analyze $V --image-file $D/bad_images.txt --format csv -o $O/o.csv")
c("X.audio.truncated", "", "analyze $W --audio tests/data/audio/truncated.wav --frames 40")
c("X.audio.bad", "m", "analyze $W --audio-file $D/bad_audio.txt --frames 40 --format jsonl")
c("X.audio.notaudio", "", "analyze $W --audio tests/data/audio/not_audio.wav --frames 40")
c("X.image.notimage", "", "analyze $V --image tests/data/audio/chirp_1s.wav")
c("X.weights.tensor", "", "weights --weights $G/model.safetensors --qkv nope --heads 4")
c("X.layer.x", "", "layer --x $D/A2.npy --weights $G/model.safetensors --qkv h.0.attn.c_attn.weight --heads 4")
c("X.rollout.o.corpus", "", "rollout $G --text-file $D/corpus.txt -o $O/R.npy")
c("X.attention.noi", "", "attention $G --tokens-file $D/gpt2_ids.txt -o $O/a.npy")
c("X.attention.noo", "", "attention %s" % IN["G"])
c("X.aggregate.missing", "", "aggregate $D/none.jsonl")
c("X.aggregate.notrecords", "", "aggregate $D/A4.npy")
c("X.compare.one", "", "compare $D/h.jsonl")
c("X.plot.nokind", "", "plot $D/h.jsonl -o $O/f.svg")
c("X.plot.ext", "", "plot $D/h.jsonl --kind heatmap --metric sigma_max -o $O/f.gif")
c("X.plot.metric", "", "plot $D/h.jsonl --kind heatmap --metric nope -o $O/f.svg")
c("X.expect.missing", "", "matrix $D/A4.npy --expect $D/none.json")
c("X.tokens.range", "", "analyze $GE --tokens 1,2,500")

hdr = """# tests/golden/cases.txt — the golden set of tests/cli/golden.sh: one case a
# line, ID FLAGS ARGS. ARGS are shell words (run by eval from the repository
# root) over $G (models/tiny-gpt2), $B (tests/data/models/tiny-bert), $GE and
# $RO (tests/data/models/arch/gemma2, roberta), $V (tiny-vit), $W
# (tiny-whisper; always with --frames 40), $D (tests/golden/data) and $O (an
# empty output folder of the case's own). FLAGS ('-' for none): j also at
# -j 1 and -j 3; m also under mpirun -n 2 with attngeom-mpi; i standard input
# from $D/corpus.txt; a $O/A.npy and $O/ids.txt (copies of $D's) made first;
# k $O/keep.csv holding "keep" made first; p $O/p.npy (tiny-vit's pixels of
# rgb8_37x23.png) and f $O/f.npy (tiny-whisper's features of chirp_1s.wav)
# made first by --save-input; e $O/golden.json (G.analyze's json) made first.
# Expected results: tests/golden/expected.txt (tests/golden/README.md)."""
ids = [l.split()[0] for l in out if l and not l.startswith("#")]
assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
open("tests/golden/cases.txt", "w").write(hdr + "\n" + "\n".join(out) + "\n")
print(len(ids))
